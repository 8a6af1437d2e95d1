import { create, toBinary } from '@bufbuild/protobuf';
import { SeriesSchema } from '@sortie/contracts';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { SeriesResult } from '../../telemetry/read.ts';
import { encodeSeries } from './series-wire.ts';
import { microsToTimestamp } from './timestamps.ts';

/** What protobuf-es writes for the same series, built as the JSON answer is. */
function viaProtobufEs(s: SeriesResult, columns: boolean): Uint8Array {
  return toBinary(
    SeriesSchema,
    create(SeriesSchema, {
      channelId: s.channelId,
      rawPoints: BigInt(s.rawPoints),
      ...(columns
        ? { timesUs: s.samples.map((p) => p.t), values: s.samples.map((p) => p.v) }
        : { points: s.samples.map((p) => ({ timestamp: microsToTimestamp(p.t), value: p.v })) }),
    }),
  );
}

const AWKWARD: SeriesResult = {
  channelId: 'ünï 7',
  rawPoints: 2 ** 40 + 3,
  samples: [
    { t: 0, v: 0 },
    { t: -1, v: -0 },
    { t: -86_400_000_000 + 999_999, v: NaN },
    { t: 1_700_000_000_123_456, v: Infinity },
    { t: 1_700_000_001_000_000, v: -Infinity },
    { t: 127_000_000, v: 5e-324 },
    { t: 128_000_000, v: -1.7976931348623157e308 },
    { t: 8_000_000_000_000_000, v: 0.1 + 0.2 },
  ],
};

describe('encodeSeries', () => {
  it('writes the bytes protobuf-es writes, as points and as columns', () => {
    for (const columns of [false, true]) {
      expect(Buffer.from(encodeSeries(AWKWARD, columns))).toEqual(Buffer.from(viaProtobufEs(AWKWARD, columns)));
      const empty = { channelId: '3', rawPoints: 0, samples: [] };
      expect(Buffer.from(encodeSeries(empty, columns))).toEqual(Buffer.from(viaProtobufEs(empty, columns)));
    }
  });

  it('agrees with protobuf-es on any series of µs times and doubles', () => {
    const sample = fc.record({ t: fc.integer({ min: -(2 ** 50), max: 2 ** 53 - 1 }), v: fc.double() });
    const series = fc.record({ channelId: fc.string({ maxLength: 12 }), rawPoints: fc.nat(), samples: fc.array(sample, { maxLength: 40 }) });
    fc.assert(
      fc.property(series, fc.boolean(), (s, columns) => {
        expect(Buffer.from(encodeSeries(s, columns))).toEqual(Buffer.from(viaProtobufEs(s, columns)));
      }),
      { numRuns: 300 },
    );
  });
});
