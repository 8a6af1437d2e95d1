import { create, toBinary } from '@bufbuild/protobuf';
import { PointBatchSchema, TelemetryPointSchema } from '@sortie/contracts';
import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../platform/errors.ts';
import { framePoint, type PointInit } from './fixture-frames.ts';
import { forEachFramePoint } from './frame-points.ts';

const frame = new Uint8Array([0xfe, 1, 2, 3, 4, 5, 6, 7, 8]);
const T = Date.UTC(2018, 7, 8, 14, 6, 1, 905) * 1000 + 123;

function collect(source: Parameters<typeof forEachFramePoint>[0]) {
  const out: Array<[string, number, number, number]> = [];
  const n = forEachFramePoint(source, (i) => `points[${i}]`, (buf, start, end, receivedUs, seq, index) => out.push([Buffer.from(buf.subarray(start, end)).toString('hex'), receivedUs, seq, index]));
  return { n, out };
}

function thrown(fn: () => unknown): ServiceError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ServiceError) return error;
    throw error;
  }
  throw new Error('expected an ServiceError');
}

const points: PointInit[] = [framePoint(frame, T, 1), framePoint(frame.subarray(0, 3), T + 1, 2 ** 40), { type: { case: 'bytes', value: frame }, frameSeq: 3n }];

describe('forEachFramePoint', () => {
  const expected = [
    ['fe0102030405060708', T, 1, 0],
    ['fe0102', T + 1, 2 ** 40, 1],
    ['fe0102030405060708', NaN, 3, 2],
  ];

  it('reads decoded points, encoded points and encoded batches alike', () => {
    const decoded = points.map((p) => create(TelemetryPointSchema, p));
    expect(collect({ points: decoded })).toEqual({ n: 3, out: expected });
    expect(collect({ encodedPoints: decoded.map((p) => toBinary(TelemetryPointSchema, p)) })).toEqual({ n: 3, out: expected });
    expect(collect({ encodedBatch: toBinary(PointBatchSchema, create(PointBatchSchema, { points: decoded })) })).toEqual({ n: 3, out: expected });
  });

  it('reads negative timestamps (before 1970) exactly', () => {
    const p = create(TelemetryPointSchema, { timestamp: { seconds: -2n, nanos: 500_000_000 }, type: { case: 'bytes', value: frame }, frameSeq: 1n });
    expect(collect({ encodedPoints: [toBinary(TelemetryPointSchema, p)] }).out[0]![1]).toBe(-1_500_000);
  });

  it('reads nanos as an int32 whether the point arrives encoded or decoded', () => {
    const p = create(TelemetryPointSchema, { timestamp: { seconds: 1n, nanos: -5000 }, type: { case: 'bytes', value: frame }, frameSeq: 1n });
    expect(collect({ encodedPoints: [toBinary(TelemetryPointSchema, p)] }).out[0]![1]).toBe(999_995);
    expect(collect({ points: [p] }).out[0]![1]).toBe(999_995);
  });

  const rules: Array<[PointInit, string]> = [
    [{ type: { case: 'double', value: 1 }, frameSeq: 1n }, 'points[0]: a mavlink-raw-v1 point carries its frame in the `bytes` member and no other value'],
    [{ frameSeq: 1n }, 'points[0]: a mavlink-raw-v1 point carries its frame in the `bytes` member and no other value'],
    [{ ...framePoint(frame, T, 1), channelId: '3' }, 'points[0]: channel_id must be empty in a mavlink-raw-v1 stream (the server names signals)'],
    [framePoint(frame, T, 0), 'points[0]: frame_seq must be set (1 or more): it is how a redelivered frame is recognised'],
    [{ ...framePoint(frame, T, 1), frameSeq: 2n ** 60n }, `points[0]: frame_seq above ${Number.MAX_SAFE_INTEGER} is not supported`],
  ];
  for (const [point, message] of rules) {
    it(`rejects: ${message}`, () => {
      const decoded = create(TelemetryPointSchema, point);
      expect(thrown(() => collect({ points: [decoded] })).message).toBe(message);
      expect(thrown(() => collect({ encodedPoints: [toBinary(TelemetryPointSchema, decoded)] })).message).toBe(message);
    });
  }

  it('rejects truncated encodings as malformed, naming the point', () => {
    const good = toBinary(TelemetryPointSchema, create(TelemetryPointSchema, points[0]!));
    const batch = toBinary(PointBatchSchema, create(PointBatchSchema, { points: [create(TelemetryPointSchema, points[0]!)] }));
    expect(thrown(() => collect({ encodedPoints: [good, good.subarray(0, good.length - 5)] })).message).toBe('points[1]: malformed TelemetryPoint encoding');
    expect(thrown(() => collect({ encodedBatch: batch.subarray(0, batch.length - 1) })).message).toBe('points[0]: malformed TelemetryPoint encoding');
  });
});
