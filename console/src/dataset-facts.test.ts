import { describe, expect, it } from 'vitest';
import { factsOf, formatStart } from './dataset-facts.tsx';
import { formatDuration } from './format.ts';

describe("a flight's facts in the list", () => {
  it('says a length as a test conductor does', () => {
    expect([0.4, 9.98, 19.9, 59.5, 60, 207, 3599.4, 3600, 3725, 36_000].map(formatDuration)).toEqual([
      '0.4 s', '9.98 s', '19.9 s', '59.5 s', '1 min 00 s', '3 min 27 s', '59 min 59 s', '1 h 00 min', '1 h 02 min', '10 h 00 min',
    ]);
    expect(formatDuration(Number.NaN)).toBe('—');
    expect(formatStart('2018-08-08T14:05:45.465009Z')).toBe('2018-08-08 14:05 UTC');
  });

  it('lists what is known, in order, and nothing of what is not', () => {
    const flight = {
      datasetId: '00000000-0000-4000-8000-000000000001',
      first: '2018-08-08T14:05:45.465009Z',
      last: '2018-08-08T14:09:12.465009Z',
      frames: 23_894,
      samples: null,
      vehicle: { mavType: 21, type: 'VTOL tiltrotor', mavAutopilot: 3, autopilot: 'ArduPlane' },
    };
    expect(factsOf(flight).map((f) => [f.fact, f.text])).toEqual([
      ['date', '2018-08-08 14:05 UTC'],
      ['duration', '3 min 27 s'],
      ['vehicle', 'VTOL tiltrotor'],
      ['autopilot', 'ArduPlane'],
      ['frames', '23,894 frames'],
    ]);
    expect(factsOf({ ...flight, first: null, last: null, frames: 1, vehicle: null }).map((f) => f.text)).toEqual(['1 frame']);
    // A flight imported from a vehicle's own log holds its messages.
    expect(factsOf({ ...flight, first: null, last: null, frames: 14_604, vehicle: null }, true).map((f) => f.text)).toEqual(['14,604 messages']);
    expect(factsOf({ ...flight, frames: null, samples: 27, vehicle: null }).map((f) => f.fact)).toEqual(['date', 'duration', 'samples']);
  });
});
