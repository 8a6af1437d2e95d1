import { create, toBinary } from '@bufbuild/protobuf';
import { PointBatchSchema, TelemetryPointSchema, type TelemetryPoint } from '@sortie/contracts';
import { describe, expect, it } from 'vitest';
import { wideChannelRows } from '../../testing/wide-channels.ts';
import { stageEncodedBatch, stageEncodedPoint } from './point-decoder.ts';
import { WideBatchBuilder, writableColumns, type WideBatch } from './wide-batch.ts';

const columns = writableColumns(wideChannelRows(['double precision', 'bigint', 'numeric(20,0)', 'boolean', 'text', 'bytea']));

const point = (channelId: string, seconds: bigint, nanos: number, type: TelemetryPoint['type']) =>
  create(TelemetryPointSchema, { channelId, timestamp: { seconds, nanos }, type });

/** Points covering every member and the awkward values of each wire type. */
const POINTS: TelemetryPoint[] = [
  point('0', 1_700_000_000n, 123_456_789, { case: 'double', value: NaN }),
  point('0', 1_700_000_001n, 0, { case: 'double', value: -0 }),
  point('0', 1_700_000_002n, 1, { case: 'float', value: Math.fround(-1.5e-7) }),
  point('0', -86_400n, 999_999_999, { case: 'int32', value: -1 }),
  point('0', 0n, 0, { case: 'uint32', value: 4294967295 }),
  point('0', 1n, 5, { case: 'enum', value: 0 }),
  point('1', 1_700_000_000n, 123_456_789, { case: 'int64', value: -9223372036854775808n }),
  point('1', 2n, 0, { case: 'int64', value: 9007199254740993n }),
  point('1', 3n, 0, { case: 'int32', value: -2147483648 }),
  point('2', 4n, 0, { case: 'uint64', value: 18446744073709551615n }),
  point('2', 5n, 0, { case: 'int64', value: -5n }),
  point('3', 6n, 0, { case: 'bool', value: false }),
  point('3', 7n, 0, { case: 'empty', value: {} as never }),
  point('4', 8n, 0, { case: 'string', value: 'ünïcødé "quoted" \\ and {braces}, commas' }),
  point('4', 9n, 0, { case: 'string', value: '' }),
  point('5', 10n, 0, { case: 'bytes', value: new Uint8Array([0, 1, 2, 255]) }),
  point('5', 11n, 0, { case: 'bitField', value: new Uint8Array([]) }),
  point(crypto.randomUUID(), 12n, 0, { case: 'double', value: 1 }),
];

function viaObjects(points: readonly TelemetryPoint[]): { batch: WideBatch; builder: WideBatchBuilder } {
  const builder = new WideBatchBuilder(columns);
  points.forEach((p, i) => builder.addPoint(p, (j) => `points[${j}]`, i));
  return { batch: builder.take(), builder };
}

describe('encoded TelemetryPoint decoding', () => {
  it('stages exactly what the decoded-object path stages, point by point', () => {
    const builder = new WideBatchBuilder(columns);
    POINTS.forEach((p, i) => stageEncodedPoint(builder, toBinary(TelemetryPointSchema, p), (j) => `points[${j}]`, i));
    const expected = viaObjects(POINTS);
    expect(builder.take()).toEqual(expected.batch);
    expect([builder.accepted, builder.ignored, [...builder.ignoredIds]]).toEqual([expected.builder.accepted, expected.builder.ignored, [...expected.builder.ignoredIds]]);
  });

  it('walks a whole PointBatch the same way', () => {
    const builder = new WideBatchBuilder(columns);
    stageEncodedBatch(builder, toBinary(PointBatchSchema, create(PointBatchSchema, { points: POINTS })), (i) => `batch.points[${i}]`);
    expect(builder.take()).toEqual(viaObjects(POINTS).batch);
  });

  it('reads a timestamp the points of a row share once, and never reuses one that differs', () => {
    // Rows of three points with the same instant, next to instants whose encodings have the same length
    // and differ in one byte, and an empty Timestamp (the epoch) right after a non-empty one.
    const rows: TelemetryPoint[] = [];
    const instants: Array<[bigint, number]> = [[1_700_000_000n, 5], [1_700_000_000n, 6], [1_700_000_001n, 6], [0n, 0], [1_700_000_001n, 6], [0n, 0], [0n, 0], [127n, 0], [128n, 0]];
    instants.forEach(([seconds, nanos], r) => {
      for (const channel of ['0', '1', '3']) rows.push(point(channel, seconds, nanos, channel === '3' ? { case: 'bool', value: r % 2 === 0 } : { case: 'int32', value: r * 10 + Number(channel) }));
    });
    // An explicitly empty Timestamp message, as some encoders write the epoch.
    rows.push(create(TelemetryPointSchema, { channelId: '0', timestamp: {}, type: { case: 'double', value: 0.5 } }));
    const builder = new WideBatchBuilder(columns);
    stageEncodedBatch(builder, toBinary(PointBatchSchema, create(PointBatchSchema, { points: rows })), (i) => `batch.points[${i}]`);
    const expected = viaObjects(rows).batch;
    expect(builder.take()).toEqual(expected);
    expect(Array.from(expected.times)).toEqual([0, 127_000_000, 128_000_000, 1_700_000_000_000_000, 1_700_000_001_000_000]);
  });

  it('keeps 64-bit integers exact beyond 2^53 and pre-1970 times floored to the microsecond', () => {
    const { batch } = viaObjects(POINTS);
    expect(batch.times[0]).toBe(-86_400_000_000 + 999_999);
    const bigint = batch.columns.find((c) => c.info.index === 1)!;
    expect(bigint.cells!.filter(Boolean)).toEqual(expect.arrayContaining(['-9223372036854775808', '9007199254740993', '-2147483648']));
  });

  it('skips unknown fields', () => {
    const known = toBinary(TelemetryPointSchema, POINTS[1]!);
    const withUnknown = new Uint8Array([...known, 0xa8, 0x06, 0x01, 0xb2, 0x06, 0x02, 0x61, 0x62]); // field 101 varint, field 102 bytes
    const builder = new WideBatchBuilder(columns);
    stageEncodedPoint(builder, withUnknown, () => 'p', 0);
    expect(builder.take()).toEqual(viaObjects([POINTS[1]!]).batch);
  });

  it('names the point when one is invalid, and refuses malformed bytes', () => {
    const bad = create(PointBatchSchema, {
      points: [POINTS[0]!, create(TelemetryPointSchema, { channelId: '0', type: { case: 'double', value: 1 } })],
    });
    expect(() => stageEncodedBatch(new WideBatchBuilder(columns), toBinary(PointBatchSchema, bad), (i) => `message 3, batch.points[${i}]`)).toThrow(
      'message 3, batch.points[1]: timestamp is required',
    );
    const truncated = toBinary(TelemetryPointSchema, POINTS[0]!).subarray(0, 7);
    expect(() => stageEncodedPoint(new WideBatchBuilder(columns), truncated, () => 'p', 0)).toThrow(/malformed/);
    const wrongWire = new Uint8Array([0x20, 0x01]); // field 4 (double) as a varint
    expect(() => stageEncodedPoint(new WideBatchBuilder(columns), wrongWire, () => 'p', 0)).toThrow(/malformed/);
    const frameSeq = toBinary(TelemetryPointSchema, create(TelemetryPointSchema, { ...POINTS[1]!, frameSeq: 9n }));
    expect(() => stageEncodedPoint(new WideBatchBuilder(columns), frameSeq, () => 'p', 0)).toThrow(/frame_seq/);
  });
});
