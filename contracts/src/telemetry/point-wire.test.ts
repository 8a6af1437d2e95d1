import { create, toBinary } from '@bufbuild/protobuf';
import { PointBatchSchema, TelemetryPointSchema } from '../gen/sortie/telemetry/v1/telemetry_pb.ts';
import { describe, expect, it } from 'vitest';
import { PointWire, WIRE_I32, WIRE_I64, WIRE_LEN, WIRE_VARINT } from './point-wire.ts';

const wire = (...bytes: number[]) => new PointWire(new Uint8Array(bytes));

describe('PointWire', () => {
  it('reads varints of up to 10 bytes and refuses truncated or longer ones', () => {
    expect(wire(0x96, 0x01).varint()).toBe(150);
    expect(wire(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01).varint()).toBe(2 ** 64);
    expect(wire(0x96).varint()).toBe(-1);
    expect(wire(...Array(10).fill(0x80), 0x00).varint()).toBe(-1);
    const r = wire(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01);
    expect([r.varint64(), r.lo, r.hi | 0]).toEqual([true, 0xffffffff, -1]);
    expect(wire(0x80).varint64()).toBe(false);
  });

  it('skips each wire type within the message and no further', () => {
    const r = wire(0x96, 0x01, 1, 2, 3, 4, 5, 6, 7, 8, 0x02, 9, 9, 1, 2, 3, 4);
    expect([r.skip(WIRE_VARINT), r.pos]).toEqual([true, 2]);
    expect([r.skip(WIRE_I64), r.pos]).toEqual([true, 10]);
    expect([r.skip(WIRE_LEN), r.pos]).toEqual([true, 13]);
    expect([r.skip(WIRE_I32), r.pos]).toEqual([true, 17]);
    expect(wire(1, 2, 3).skip(WIRE_I32)).toBe(false);
    expect(wire(0x05, 1).skip(WIRE_LEN)).toBe(false);
    expect(wire(0).skip(3)).toBe(false);
  });

  it('walks the points of a batch and reads timestamps in place', () => {
    const points = [
      { timestamp: { seconds: -2n, nanos: 500_000_000 }, channelId: '1' },
      { timestamp: { seconds: 1_700_000_000n, nanos: 7 }, channelId: '2' },
    ].map((p) => create(TelemetryPointSchema, p));
    const bytes = toBinary(PointBatchSchema, create(PointBatchSchema, { points }));
    const r = new PointWire(bytes);
    const seen: Array<[number, number, number]> = [];
    for (let found = r.nextBatchPoint(); found === 1; found = r.nextBatchPoint()) {
      const end = r.end;
      expect(r.varint()).toBe(0x0a);
      expect(r.timestamp()).toBe(true);
      expect(r.end).toBe(end);
      seen.push([r.seconds, r.nanos, end - r.pos]);
      r.leavePoint();
    }
    expect(seen).toEqual([
      [-2, 500_000_000, 3],
      [1_700_000_000, 7, 3],
    ]);
    const truncated = new PointWire(bytes.subarray(0, bytes.length - 1));
    expect(truncated.nextBatchPoint()).toBe(1);
    truncated.leavePoint();
    expect(truncated.nextBatchPoint()).toBe(-1);
  });

  it('reads a negative nanos as the int32 it is', () => {
    const point = toBinary(TelemetryPointSchema, create(TelemetryPointSchema, { timestamp: { seconds: 1n, nanos: -5000 } }));
    const r = new PointWire(point);
    r.varint();
    expect([r.timestamp(), r.seconds, r.nanos]).toEqual([true, 1, -5000]);
  });

  it('reads little-endian doubles and floats', () => {
    const bytes = new Uint8Array(12);
    const view = new DataView(bytes.buffer);
    view.setFloat64(0, -1.25, true);
    view.setFloat32(8, 0.5, true);
    const r = new PointWire(bytes);
    expect([r.float64(), r.float32(), r.pos]).toEqual([-1.25, 0.5, 12]);
  });
});
