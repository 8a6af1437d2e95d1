import { create } from '@bufbuild/protobuf';
import { TelemetryPointSchema, type TelemetryPoint } from '@sortie/contracts';
import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../platform/errors.ts';
import { wideChannelRows } from '../../testing/wide-channels.ts';
import { ACCEPTED_CASES, type PointValueCase } from './point-values.ts';
import { channelIndexOf, UnknownColumnError, WideBatchBuilder, writableColumns } from './wide-batch.ts';

const TYPES = ['double precision', 'bigint', 'numeric(20,0)', 'boolean', 'text', 'bytea'];

const at = (seconds: number, nanos = 0) => ({ seconds: BigInt(seconds), nanos });
const point = (channelId: string, type: TelemetryPoint['type'], ts = at(1_700_000_000)) => create(TelemetryPointSchema, { channelId, timestamp: ts, type });

/** One sample value per oneof member. */
const SAMPLES: Record<PointValueCase, TelemetryPoint['type']> = {
  string: { case: 'string', value: 'he said "hi" \\ ok ✓' },
  double: { case: 'double', value: -0.1 },
  float: { case: 'float', value: Math.fround(3.3) },
  bool: { case: 'bool', value: true },
  int32: { case: 'int32', value: -2147483648 },
  uint32: { case: 'uint32', value: 4294967295 },
  int64: { case: 'int64', value: -9223372036854775808n },
  uint64: { case: 'uint64', value: 18446744073709551615n },
  bitField: { case: 'bitField', value: new Uint8Array([0b1010_0001, 0]) },
  enum: { case: 'enum', value: 7 },
  empty: { case: 'empty', value: {} as never },
  bytes: { case: 'bytes', value: new Uint8Array([0, 255, 92, 34]) },
};

/** What each member stores: the element text of non-double columns, and the double rollups see. */
const STORED: Record<PointValueCase, { text: string; num: number }> = {
  string: { text: '"he said \\"hi\\" \\\\ ok ✓"', num: NaN },
  double: { text: '-0.1', num: -0.1 },
  float: { text: String(Math.fround(3.3)), num: Math.fround(3.3) },
  bool: { text: 't', num: 1 },
  int32: { text: '-2147483648', num: -2147483648 },
  uint32: { text: '4294967295', num: 4294967295 },
  int64: { text: '-9223372036854775808', num: -9223372036854775808 },
  uint64: { text: '18446744073709551615', num: 18446744073709551615 },
  bitField: { text: '"\\\\xa100"', num: NaN },
  enum: { text: '7', num: 7 },
  empty: { text: 't', num: 1 },
  bytes: { text: '"\\\\x00ff5c22"', num: NaN },
};

describe('value mapping: every member into every column type', () => {
  for (const [col, type] of TYPES.entries()) {
    for (const kind of Object.keys(SAMPLES) as PointValueCase[]) {
      const accepted = ACCEPTED_CASES[type]!.includes(kind);
      it(`${kind} into ${type}: ${accepted ? 'stored exactly' : 'INVALID_ARGUMENT'}`, () => {
        const builder = new WideBatchBuilder(writableColumns(wideChannelRows(TYPES)));
        const add = () => builder.addPoint(point(String(col), SAMPLES[kind]), () => 'points[0]', 0);
        if (!accepted) {
          expect(add).toThrow(ServiceError);
          expect(add).toThrow(/points\[0\]: channel \d: a \w+ value does not fit/);
          expect(builder.take().times).toHaveLength(0);
          return;
        }
        add();
        const batch = builder.take();
        const column = batch.columns[0]!;
        expect(column.present[0]).toBe(1);
        if (type === 'double precision') expect(column.cells).toBeUndefined();
        else expect(column.cells![0]).toBe(STORED[kind].text);
        if (column.values) expect(Object.is(column.values[0], STORED[kind].num) || column.values[0] === STORED[kind].num).toBe(true);
        else expect(['text', 'bytea']).toContain(type);
      });
    }
  }
});

describe('WideBatchBuilder', () => {
  const columns = writableColumns(wideChannelRows(['double precision', 'double precision', 'text']));

  it('pivots points into rows by timestamp, merging across channels and keeping the last value per cell', () => {
    const b = new WideBatchBuilder(columns);
    b.addPoint(point('0', { case: 'double', value: 1 }, at(10)), () => 'p0', 0);
    b.addPoint(point('1', { case: 'double', value: 2 }, at(10)), () => 'p1', 0);
    b.addPoint(point('0', { case: 'double', value: 3 }, at(11)), () => 'p2', 0);
    b.addPoint(point('0', { case: 'double', value: 4 }, at(10)), () => 'p3', 0);
    expect(b.size).toBe(4);
    const batch = b.take();
    expect([...batch.times]).toEqual([10_000_000, 11_000_000]);
    expect([...batch.columns[0]!.values!]).toEqual([4, 3]);
    expect([...batch.columns[1]!.present]).toEqual([1, 0]);
    expect(batch.cells).toBe(3);
    expect(batch.mergedInBatch).toBe(1);
    expect(b.accepted).toBe(4);
  });

  it('sorts rows that arrive out of time order, keeping each column aligned', () => {
    const b = new WideBatchBuilder(columns);
    for (const [s, v] of [[30, 3], [10, 1], [20, 2], [10, 9]] as const) {
      b.addPoint(point('0', { case: 'double', value: v }, at(s)), () => 'p', 0);
      b.addPoint(point('2', { case: 'string', value: `s${v}` }, at(s)), () => 'p', 0);
    }
    const batch = b.take();
    expect([...batch.times]).toEqual([10e6, 20e6, 30e6]);
    expect([...batch.columns[0]!.values!]).toEqual([9, 2, 3]);
    expect(batch.columns[1]!.cells).toEqual(['"s9"', '"s2"', '"s3"']);
  });

  it('grows past its initial capacity', () => {
    const b = new WideBatchBuilder(columns);
    for (let i = 0; i < 5000; i++) b.addPoint(point(String(i % 2), { case: 'double', value: i }, at(i)), () => 'p', 0);
    const batch = b.take();
    expect(batch.times).toHaveLength(5000);
    expect(batch.columns[0]!.values![4998]).toBe(4998);
    expect(batch.columns[1]!.values![4999]).toBe(4999);
    expect(batch.columns[1]!.present[4998]).toBe(0);
  });

  it('counts a channel UUID (or any non-index id) as accepted and ignored, storing nothing', () => {
    const b = new WideBatchBuilder(columns);
    const uuid = crypto.randomUUID();
    b.addPoint(point(uuid, { case: 'double', value: 1 }), () => 'p', 0);
    b.addPoint(point('ch_0', { case: 'double', value: 1 }), () => 'p', 0);
    expect([b.accepted, b.ignored, [...b.ignoredIds]]).toEqual([2, 2, [uuid, 'ch_0']]);
    expect(b.take().times).toHaveLength(0);
  });

  it('refuses an unknown ch_N (UnknownColumnError), a missing timestamp or value, frame_seq, nanos out of range', () => {
    const b = new WideBatchBuilder(columns);
    expect(() => b.addPoint(point('7', { case: 'double', value: 1 }), () => 'p', 0)).toThrow(UnknownColumnError);
    expect(() => b.addPoint(create(TelemetryPointSchema, { channelId: '0', type: { case: 'double', value: 1 } }), () => 'p9', 0)).toThrow(
      'p9: timestamp is required',
    );
    expect(() => b.addPoint(point('0', { case: undefined }), () => 'p', 0)).toThrow(/carries no value/);
    expect(() => b.addPoint(create(TelemetryPointSchema, { ...point('0', { case: 'double', value: 1 }), frameSeq: 3n }), () => 'p', 0)).toThrow(/frame_seq/);
    expect(() => b.addPoint(point('0', { case: 'double', value: 1 }, at(1, 1_000_000_000)), () => 'p', 0)).toThrow(/nanos/);
    expect(() => b.addPoint(point('0', { case: 'double', value: 1 }, at(1e10)), () => 'p', 0)).toThrow(/outside the supported range/);
    expect(() => b.addPoint(point('2', { case: 'string', value: 'a\u0000b' }), () => 'p', 0)).toThrow(/NUL/);
    expect(b.size).toBe(0);
    expect(b.accepted).toBe(0);
  });

  it('drops nanoseconds below a microsecond, flooring (also before 1970)', () => {
    const b = new WideBatchBuilder(columns);
    b.addPoint(point('0', { case: 'double', value: 1 }, at(5, 1_999)), () => 'p', 0);
    b.addPoint(point('0', { case: 'double', value: 2 }, at(-5, 999)), () => 'p', 0);
    expect([...b.take().times]).toEqual([-5_000_000, 5_000_001]);
  });

  it('rolls back to a mark: counters restored, staged cells dropped', () => {
    const b = new WideBatchBuilder(columns);
    const mark = b.mark();
    b.addPoint(point('0', { case: 'double', value: 1 }), () => 'p', 0);
    b.ignore('x');
    b.rollback(mark);
    expect([b.size, b.accepted, b.ignored]).toEqual([0, 0, 0]);
    b.addPoint(point('0', { case: 'double', value: 1 }), () => 'p', 0);
    const later = b.mark();
    b.addPoint(point('1', { case: 'double', value: 1 }), () => 'p', 0);
    expect(() => b.rollback(later)).toThrow(/empty builder/);
  });
});

describe('channelIndexOf', () => {
  it('takes canonical decimal indexes only', () => {
    expect(['0', '7', '17', '123456789'].map(channelIndexOf)).toEqual([0, 7, 17, 123456789]);
    expect(['', '07', '-1', '1.0', 'ch_1', ' 1', '1234567890', crypto.randomUUID()].map(channelIndexOf)).toEqual([-1, -1, -1, -1, -1, -1, -1, -1]);
  });
});
