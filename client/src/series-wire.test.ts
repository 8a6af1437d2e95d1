import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { FollowUpdateSchema, QueryResponseSchema, SeriesSchema, type Series } from '@sortie/contracts';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { followAnswer, queryAnswer } from './answers.ts';
import { readSeriesBytes } from './series-wire.ts';

/** Series as a server writes them: any channel id, points with times from 1970 to 2200, or columns. */
const seconds = fc.integer({ min: 0, max: 7_258_118_400 });
const nanos = fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 999 }).map((n) => n * 1_000_000), fc.integer({ min: 0, max: 999_999 }).map((n) => n * 1000), fc.integer({ min: 0, max: 999_999_999 }));
const value = fc.oneof(fc.double(), fc.constant(0), fc.constant(-0), fc.constant(Number.NaN), fc.constant(Number.POSITIVE_INFINITY));
const point = fc.record({ timestamp: fc.option(fc.record({ seconds, nanos }), { nil: undefined, freq: 10 }), value });
const series = fc.record({
  channelId: fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.constant('\uFEFFbom')),
  points: fc.array(point, { maxLength: 40 }),
  rawPoints: fc.nat(),
  timesUs: fc.array(fc.double(), { maxLength: 20 }),
  values: fc.array(fc.double(), { maxLength: 20 }),
});

function seriesOf(s: { channelId: string; points: Array<{ timestamp?: { seconds: number; nanos: number }; value: number }>; rawPoints: number; timesUs: number[]; values: number[] }): Series {
  return create(SeriesSchema, {
    channelId: s.channelId,
    points: s.points.map((p) => ({ value: p.value, ...(p.timestamp && { timestamp: { seconds: BigInt(p.timestamp.seconds), nanos: p.timestamp.nanos } }) })),
    rawPoints: BigInt(s.rawPoints),
    timesUs: s.timesUs,
    values: s.values,
  });
}

/** The answer as the generated descriptor gives it: protobuf-es decodes, the client maps. */
function generatedAnswer(bytes: Uint8Array) {
  return queryAnswer(fromBinary(QueryResponseSchema, bytes)).series[0];
}

function encodedQuery(s: Series): Uint8Array {
  return toBinary(QueryResponseSchema, create(QueryResponseSchema, { series: [s], totalRawPoints: s.rawPoints }));
}

describe('Series read by hand', () => {
  it('gives what protobuf-es and the answer mapping give, and reads every series a server writes itself', () => {
    fc.assert(
      fc.property(series, (input) => {
        const s = seriesOf(input);
        const bytes = toBinary(SeriesSchema, s);
        const read = readSeriesBytes(bytes);
        expect(read).toBeDefined();
        expect(read).toStrictEqual(generatedAnswer(encodedQuery(s)));
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps every bit of a value: -0, NaN and the exact double', () => {
    const bytes = toBinary(SeriesSchema, create(SeriesSchema, { points: [{ timestamp: { seconds: 1n }, value: -0 }, { value: Number.NaN }, { value: 0.1 + 0.2 }] }));
    const read = readSeriesBytes(bytes)!;
    expect(Object.is(read.points[0]!.value, -0)).toBe(true);
    expect(read.points[1]!.value).toBeNaN();
    expect(read.points[2]!.value).toBe(0.1 + 0.2);
    expect(read.points.map((p) => p.timestamp)).toEqual(['1970-01-01T00:00:01Z', '', '']);
  });

  it('leaves to protobuf-es what it does not read, with the same answer or the same failure', () => {
    // Spoiled encodings: bytes cut off, changed or inserted. Whatever protobuf-es makes of them, the
    // answer through the client's descriptor (the hand reader, else protobuf-es) is the same.
    const spoiled = fc
      .tuple(series, fc.nat(), fc.integer({ min: 0, max: 255 }), fc.constantFrom('cut', 'change', 'insert'))
      .map(([input, at, byte, how]) => {
        const bytes = toBinary(SeriesSchema, seriesOf(input));
        const i = bytes.length === 0 ? 0 : at % bytes.length;
        if (how === 'cut') return bytes.subarray(0, i);
        if (how === 'change' && bytes.length > 0) return Uint8Array.from(bytes, (b, j) => (j === i ? byte : b));
        return Uint8Array.from([...bytes.subarray(0, i), byte, ...bytes.subarray(i)]);
      });
    let read = 0;
    let failed = 0;
    fc.assert(
      fc.property(spoiled, (bytes) => {
        // The spoiled Series as QueryResponse.series (field 1), for protobuf-es to decode whole.
        const outer = Uint8Array.from([0x0a, ...varint(bytes.length), ...bytes]);
        let generated: unknown;
        let generatedError: unknown;
        try {
          generated = generatedAnswer(outer);
        } catch (error) {
          generatedError = error;
        }
        if (generatedError === undefined) {
          expect(queryAnswer({ series: [bytes], totalRawPoints: 0n }).series[0]).toStrictEqual(generated);
          if (readSeriesBytes(bytes) !== undefined) read++;
        } else {
          failed++;
          expect(() => queryAnswer({ series: [bytes], totalRawPoints: 0n })).toThrow();
        }
      }),
      { numRuns: 3000 },
    );
    // Both kinds of spoiled bytes occurred: some read by hand, some refused by protobuf-es.
    expect(read).toBeGreaterThan(0);
    expect(failed).toBeGreaterThan(0);
  });

  it('hands over to protobuf-es for what protobuf allows and is rare: an unknown field, a Timestamp given twice, times before 1970', () => {
    const unknown = Uint8Array.from([...toBinary(SeriesSchema, create(SeriesSchema, { channelId: 'a', rawPoints: 3n })), 0x30, 0x01]);
    const twice = Uint8Array.from([0x12, 0x08, 0x0a, 0x02, 0x08, 0x05, 0x0a, 0x02, 0x10, 0x07]);
    const early = toBinary(SeriesSchema, create(SeriesSchema, { points: [{ timestamp: { seconds: -1n, nanos: 5 }, value: 2 }] }));
    for (const bytes of [unknown, twice, early]) {
      expect(readSeriesBytes(bytes)).toBeUndefined();
      expect(queryAnswer({ series: [bytes], totalRawPoints: 0n })).toStrictEqual(queryAnswer({ series: [fromBinary(SeriesSchema, bytes)], totalRawPoints: 0n }));
    }
    // The Timestamp given twice merges: seconds from the first, nanos from the second.
    expect(queryAnswer({ series: [twice], totalRawPoints: 0n }).series[0]!.points[0]!.timestamp).toBe('1970-01-01T00:00:05.000000007Z');
    expect(queryAnswer({ series: [early], totalRawPoints: 0n }).series[0]!.points[0]!.timestamp).toBe('1969-12-31T23:59:59.000000005Z');
  });

  it('takes a Timestamp only as every writer writes it: anything else inside one goes to protobuf-es', () => {
    // SeriesPoint { timestamp: <ts>, value: 2 } inside a Series.
    const pointWith = (...ts: number[]) => Uint8Array.from([0x12, ts.length + 11, 0x0a, ts.length, ...ts, 0x11, 0, 0, 0, 0, 0, 0, 0, 0x40]);
    const cases = {
      unknownField: pointWith(0x08, 0x05, 0x18, 0x01),
      secondsTwice: pointWith(0x08, 0x05, 0x08, 0x06),
      zeroWritten: pointWith(0x08, 0x05, 0x10, 0x00),
      overlongSeconds: pointWith(0x08, 0x85, 0x00),
      secondsAsFixed64: pointWith(0x09, 1, 0, 0, 0, 0, 0, 0, 0),
      nanosAbove32Bits: pointWith(0x10, 0x81, 0x80, 0x80, 0x80, 0x10),
    };
    for (const [name, bytes] of Object.entries(cases)) {
      expect(readSeriesBytes(bytes), name).toBeUndefined();
      let generated: unknown;
      try {
        generated = generatedAnswer(Uint8Array.from([0x0a, ...varint(bytes.length), ...bytes]));
      } catch {
        expect(() => queryAnswer({ series: [bytes], totalRawPoints: 0n }), name).toThrow();
        continue;
      }
      expect(queryAnswer({ series: [bytes], totalRawPoints: 0n }).series[0], name).toStrictEqual(generated);
    }
    // Reordered fields are still what a writer may write, and are read by hand.
    expect(readSeriesBytes(pointWith(0x10, 0x07, 0x08, 0x05))!.points[0]!.timestamp).toBe('1970-01-01T00:00:05.000000007Z');
  });

  it('leaves to protobuf-es tags longer than a byte, which it refuses above five, and keeps a byte-order mark', () => {
    const longTags = [
      Uint8Array.of(0x98, 0x80, 0x80, 0x80, 0x80, 0x00, 0x05), // raw_points, six-byte tag
      Uint8Array.of(0x92, 0x80, 0x80, 0x80, 0x80, 0x00, 0x00), // points
      Uint8Array.of(0x8a, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x01, 0x61), // channel_id, ten bytes
      Uint8Array.of(0x98, 0x00, 0x05), // a two-byte tag protobuf-es takes
      Uint8Array.of(0x12, 0x0b, 0x91, 0x80, 0x80, 0x80, 0x80, 0x00, 0, 0, 0, 0, 0), // a point's value, six-byte tag
    ];
    for (const bytes of longTags) {
      expect(readSeriesBytes(bytes)).toBeUndefined();
      let generated: unknown;
      try {
        generated = generatedAnswer(Uint8Array.from([0x0a, ...varint(bytes.length), ...bytes]));
      } catch {
        expect(() => queryAnswer({ series: [bytes], totalRawPoints: 0n })).toThrow();
        continue;
      }
      expect(queryAnswer({ series: [bytes], totalRawPoints: 0n }).series[0]).toStrictEqual(generated);
    }
    const bom = toBinary(SeriesSchema, create(SeriesSchema, { channelId: '\uFEFFa' }));
    expect(readSeriesBytes(bom)!.channelId).toBe('\uFEFFa');
    expect(readSeriesBytes(bom)).toStrictEqual(generatedAnswer(encodedQuery(fromBinary(SeriesSchema, bom))));
  });

  it('reads Follow updates the same way', () => {
    const s = seriesOf({ channelId: '3', points: [{ timestamp: { seconds: 1_700_000_000, nanos: 250_000_000 }, value: 1.5 }], rawPoints: 1, timesUs: [], values: [] });
    const update = create(FollowUpdateSchema, { reset: true, series: [s], dropped: 2n });
    expect(followAnswer({ ...update, series: [toBinary(SeriesSchema, s)] })).toStrictEqual(followAnswer(update));
  });
});

function varint(n: number): number[] {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return out;
}
