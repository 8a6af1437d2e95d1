import { describe, expect, it } from 'vitest';
import {
  RECORD_HEADER_BYTES,
  SEGMENT_HEADER_BYTES,
  checkSegmentHeader,
  encodeRecord,
  encodeSegmentHeader,
  newRecordView,
  parseSegmentFileName,
  readReceivedAtUs,
  readRecordAt,
  scanSegment,
  segmentFileName,
} from './record-format.ts';

function segmentImage(baseSeq: number, payloads: Buffer[]): Buffer {
  const size = SEGMENT_HEADER_BYTES + payloads.reduce((n, p) => n + RECORD_HEADER_BYTES + p.length, 0);
  const buf = Buffer.alloc(size);
  encodeSegmentHeader(baseSeq).copy(buf, 0);
  let off = SEGMENT_HEADER_BYTES;
  payloads.forEach((p, i) => {
    off += encodeRecord(buf, off, baseSeq + i, 1_700_000_000_000_000 + i, p);
  });
  return buf;
}

const frames = (n: number, len = 40): Buffer[] => Array.from({ length: n }, (_, i) => Buffer.alloc(len, i + 1));

describe('segment header', () => {
  it('round-trips the base seq and rejects damage', () => {
    const h = encodeSegmentHeader(2 ** 40 + 7);
    expect(checkSegmentHeader(h)).toEqual({ ok: true, baseSeq: 2 ** 40 + 7 });
    const flipped = Buffer.from(h);
    flipped[17] = (flipped[17] ?? 0) ^ 0x01;
    expect(checkSegmentHeader(flipped)).toEqual({ ok: false, reason: 'bad-crc' });
    expect(checkSegmentHeader(h.subarray(0, 20))).toEqual({ ok: false, reason: 'short' });
    const notOurs = Buffer.from(h);
    notOurs.write('XXXX', 0, 'latin1');
    expect(checkSegmentHeader(notOurs)).toEqual({ ok: false, reason: 'bad-magic' });
  });

  it('reports a newer format version instead of guessing', async () => {
    const h = encodeSegmentHeader(1);
    h.writeUInt16LE(2, 8);
    const { crc32 } = await import('node:zlib');
    h.writeUInt32LE(crc32(h.subarray(0, 28)), 28);
    expect(checkSegmentHeader(h)).toEqual({ ok: false, reason: 'unsupported-version', version: 2 });
  });

  it('names segments so that lexical order is seq order', () => {
    expect(segmentFileName(42)).toBe('00000000000000000042.seg');
    expect(parseSegmentFileName('00000000000000000042.seg')).toBe(42);
    expect(parseSegmentFileName('00000000000000000042.seg.corrupt')).toBeNull();
    expect(parseSegmentFileName('state.json')).toBeNull();
  });
});

describe('records', () => {
  it('encode and decode seq, timestamp and payload', () => {
    const buf = Buffer.alloc(100);
    const payload = Buffer.from('fe1c0001', 'hex');
    const n = encodeRecord(buf, 3, 9_007_199_254_740_991, 0xffff_ffff_ffff_fff0n, payload);
    expect(n).toBe(RECORD_HEADER_BYTES + 4);
    const view = newRecordView();
    expect(readRecordAt(buf, 3, buf.length, view)).toBe('ok');
    expect(view.seq).toBe(9_007_199_254_740_991);
    expect(readReceivedAtUs(buf, 3)).toBe(0xffff_ffff_ffff_fff0n);
    expect(buf.subarray(view.payloadStart, view.payloadStart + view.payloadLength)).toEqual(payload);
  });

  it('detects every single-bit flip in header and payload', () => {
    const buf = Buffer.alloc(RECORD_HEADER_BYTES + 40);
    encodeRecord(buf, 0, 5, 123, Buffer.alloc(40, 0x5a));
    const view = newRecordView();
    for (let byte = 0; byte < buf.length; byte++) {
      for (let bit = 0; bit < 8; bit++) {
        const copy = Buffer.from(buf);
        copy[byte] = (copy[byte] ?? 0) ^ (1 << bit);
        expect(readRecordAt(copy, 0, copy.length, view), `byte ${byte} bit ${bit}`).not.toBe('ok');
      }
    }
  });

  it('reports a record cut short', () => {
    const buf = Buffer.alloc(RECORD_HEADER_BYTES + 40);
    encodeRecord(buf, 0, 5, 123, Buffer.alloc(40));
    const view = newRecordView();
    expect(readRecordAt(buf, 0, 10, view)).toBe('short-header');
    expect(readRecordAt(buf, 0, buf.length - 1, view)).toBe('short-payload');
  });
});

describe('scanSegment', () => {
  it('walks a clean segment', () => {
    const img = segmentImage(10, frames(5));
    const seen: number[] = [];
    const scan = scanSegment(img, 10, (seq) => seen.push(seq));
    expect(seen).toEqual([10, 11, 12, 13, 14]);
    expect(scan).toMatchObject({ records: 5, firstSeq: 10, lastSeq: 14, goodEnd: img.length, tail: null });
    expect(scan.corruptions).toEqual([]);
  });

  it('reports garbage after the last record as the tail', () => {
    const img = segmentImage(1, frames(3));
    const withGarbage = Buffer.concat([img, Buffer.from('not a record at all, just noise')]);
    const scan = scanSegment(withGarbage, 1, () => {});
    expect(scan.records).toBe(3);
    expect(scan.tail?.offset).toBe(img.length);
    expect(scan.goodEnd).toBe(img.length);
  });

  it('resynchronises past a corrupt record and keeps the ones after it', () => {
    const img = segmentImage(1, frames(6));
    const rec2 = SEGMENT_HEADER_BYTES + 2 * (RECORD_HEADER_BYTES + 40);
    img[rec2 + 30] = (img[rec2 + 30] ?? 0) ^ 0x10;
    const seen: Array<[number, boolean]> = [];
    const scan = scanSegment(img, 1, (seq, _off, gap) => seen.push([seq, gap]));
    expect(seen).toEqual([
      [1, false],
      [2, false],
      [4, true],
      [5, false],
      [6, false],
    ]);
    expect(scan.corruptions).toEqual([
      { offset: rec2, reason: 'bad-crc', skippedBytes: RECORD_HEADER_BYTES + 40, lostRecords: 1 },
    ]);
    expect(scan.tail).toBeNull();
  });

  it('survives a corrupted length field', () => {
    const img = segmentImage(1, frames(4));
    const rec1 = SEGMENT_HEADER_BYTES + RECORD_HEADER_BYTES + 40;
    img.writeUInt32LE(0x7fff_ffff, rec1 + 4);
    const scan = scanSegment(img, 1, () => {});
    expect(scan.records).toBe(3);
    expect(scan.corruptions[0]).toMatchObject({ offset: rec1, reason: 'bad-length', lostRecords: 1 });
  });

  it('treats a zero-filled tail (unwritten pages after a crash) as tail', () => {
    const img = segmentImage(1, frames(2));
    const scan = scanSegment(Buffer.concat([img, Buffer.alloc(4096)]), 1, () => {});
    expect(scan.records).toBe(2);
    expect(scan.tail).toEqual({ offset: img.length, reason: 'bad-crc' });
  });

  it('flags a CRC-valid record whose seq does not follow', () => {
    const a = segmentImage(1, frames(2));
    const stray = Buffer.alloc(RECORD_HEADER_BYTES + 40);
    encodeRecord(stray, 0, 1, 0, Buffer.alloc(40)); // seq 1 again
    const scan = scanSegment(Buffer.concat([a, stray]), 1, () => {});
    expect(scan.records).toBe(2);
    expect(scan.tail).toEqual({ offset: a.length, reason: 'bad-seq' });
  });
});
