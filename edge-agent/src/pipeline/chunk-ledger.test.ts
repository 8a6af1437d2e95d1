import { describe, expect, it } from 'vitest';
import { ChunkLedger } from './chunk-ledger.ts';

describe('ChunkLedger', () => {
  it('gives a frame the receive time of the chunk holding its last byte', () => {
    const ledger = new ChunkLedger();
    ledger.add(10, 100);
    ledger.add(10, 200);
    ledger.add(10, 300);
    expect(ledger.locate(4).receivedAtUs).toBe(100);
    expect(ledger.locate(10).receivedAtUs).toBe(100); // ends exactly at the first chunk's end
    expect(ledger.locate(11).receivedAtUs).toBe(200);
    expect(ledger.locate(30).receivedAtUs).toBe(300);
    expect(() => ledger.locate(31)).toThrow(RangeError);
  });

  it('maps a raw capture byte for byte to file offsets, from wherever the replay started', () => {
    const ledger = new ChunkLedger();
    ledger.add(100, 1, { start: 5000, end: 5100 });
    ledger.add(100, 2, { start: 5100, end: 5200 });
    expect(ledger.locate(37).sourcePosition).toBe(5037);
    expect(ledger.locate(150).sourcePosition).toBe(5150);
  });

  it('maps a tlog record (timestamp + frame) to the end of the record', () => {
    const ledger = new ChunkLedger();
    ledger.add(30, 1, { start: 0, end: 38 });
    ledger.add(20, 2, { start: 38, end: 66 });
    expect(ledger.locate(30).sourcePosition).toBe(38);
    expect(ledger.locate(50).sourcePosition).toBe(66);
  });

  it('falls back to the start of a record a frame ends inside (repeat, never skip)', () => {
    const ledger = new ChunkLedger();
    ledger.add(30, 1, { start: 0, end: 38 });
    expect(ledger.locate(20).sourcePosition).toBe(0);
  });

  it('has no position for live chunks', () => {
    const ledger = new ChunkLedger();
    ledger.add(30, 1);
    expect(ledger.locate(30).sourcePosition).toBeNull();
  });

  it('forgets consumed chunks, so a stream of junk does not grow it', () => {
    const ledger = new ChunkLedger();
    for (let i = 0; i < 10_000; i++) {
      ledger.add(10, i);
      ledger.release((i + 1) * 10);
    }
    expect(ledger.size).toBe(0);
    ledger.add(10, 7);
    ledger.release(99_995); // partly consumed: kept
    expect(ledger.size).toBe(1);
  });
});
