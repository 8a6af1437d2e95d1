import { create, toBinary } from '@bufbuild/protobuf';
import { SeriesSchema } from '@sortie/contracts';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sampleColumnsOf, type SeriesResult } from '../../telemetry/read.ts';
import type { Sample } from '../../telemetry/series/lttb.ts';
import { encodeSeries } from './series-wire.ts';
import { microsToTimestamp } from './timestamps.ts';

/** A series with its samples listed, as the tests write them. */
type Listed = Omit<SeriesResult, 'samples'> & { samples: Sample[] };

const encode = (s: Listed, columns: boolean) => encodeSeries({ ...s, samples: sampleColumnsOf(s.samples) }, columns);

/** What protobuf-es writes for the same series, built from objects. */
function viaProtobufEs(s: Listed, columns: boolean): Uint8Array {
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

const AWKWARD: Listed = {
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
      expect(Buffer.from(encode(AWKWARD, columns))).toEqual(Buffer.from(viaProtobufEs(AWKWARD, columns)));
      const empty = { channelId: '3', rawPoints: 0, samples: [] };
      expect(Buffer.from(encode(empty, columns))).toEqual(Buffer.from(viaProtobufEs(empty, columns)));
    }
  });

  it('agrees with protobuf-es on any series of µs times and doubles', () => {
    const sample = fc.record({ t: fc.integer({ min: -(2 ** 50), max: 2 ** 53 - 1 }), v: fc.double() });
    const series = fc.record({ channelId: fc.string({ maxLength: 12 }), rawPoints: fc.nat(), samples: fc.array(sample, { maxLength: 40 }) });
    fc.assert(
      fc.property(series, fc.boolean(), (s, columns) => {
        expect(Buffer.from(encode(s, columns))).toEqual(Buffer.from(viaProtobufEs(s, columns)));
      }),
      { numRuns: 300 },
    );
  });
});
