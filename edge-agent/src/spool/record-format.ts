// On-disk encoding of spool segments. The layout is documented at the top of spool.ts; this module
// is the single place that knows the byte offsets, so the writer, the recovery scan and the reader
// cannot disagree about them.
import { crc32 } from 'node:zlib';

export const SEGMENT_MAGIC = Buffer.from('SORTIESP', 'latin1');
export const SEGMENT_FORMAT_VERSION = 1;
export const SEGMENT_HEADER_BYTES = 32;
export const RECORD_HEADER_BYTES = 24;
/** A MAVLink v2 frame is at most 280 bytes; the cap only exists so a corrupt length cannot make a
 *  reader allocate gigabytes, and so the resync scan can reject garbage lengths cheaply. */
export const MAX_PAYLOAD_BYTES = 1 << 20;

const TWO_32 = 2 ** 32;
/** Seqs are kept as JS numbers internally; at 10^6 frames/s this lasts 285 years. */
const MAX_SEQ = Number.MAX_SAFE_INTEGER;

export function segmentFileName(baseSeq: number): string {
  return `${String(baseSeq).padStart(20, '0')}.seg`;
}

const SEGMENT_FILE_RE = /^(\d{20})\.seg$/;

/** Base seq encoded in a segment file name, or null when the name is not a segment. */
export function parseSegmentFileName(name: string): number | null {
  const m = SEGMENT_FILE_RE.exec(name);
  if (!m?.[1]) return null;
  const n = Number(m[1]);
  return Number.isSafeInteger(n) ? n : null;
}

export function writeU64(buf: Buffer, off: number, value: number): void {
  buf.writeUInt32LE(value % TWO_32, off);
  buf.writeUInt32LE(Math.floor(value / TWO_32), off + 4);
}

/** Reads a uint64 as a number; returns -1 when it does not fit a safe integer (treated as corrupt). */
export function readU64(buf: Buffer, off: number): number {
  const hi = buf.readUInt32LE(off + 4);
  if (hi > 0x1fffff) return -1;
  return hi * TWO_32 + buf.readUInt32LE(off);
}

export function encodeSegmentHeader(baseSeq: number): Buffer {
  const buf = Buffer.alloc(SEGMENT_HEADER_BYTES);
  SEGMENT_MAGIC.copy(buf, 0);
  buf.writeUInt16LE(SEGMENT_FORMAT_VERSION, 8);
  buf.writeUInt16LE(SEGMENT_HEADER_BYTES, 10);
  buf.writeUInt32LE(RECORD_HEADER_BYTES, 12);
  writeU64(buf, 16, baseSeq);
  buf.writeUInt32LE(crc32(buf.subarray(0, 28)), 28);
  return buf;
}

export type SegmentHeaderCheck =
  | { readonly ok: true; readonly baseSeq: number }
  | { readonly ok: false; readonly reason: 'short' | 'bad-magic' | 'bad-crc' | 'bad-layout' }
  /** A well-formed header from a newer writer: refusing is safer than guessing at its records. */
  | { readonly ok: false; readonly reason: 'unsupported-version'; readonly version: number };

export function checkSegmentHeader(buf: Buffer): SegmentHeaderCheck {
  if (buf.length < SEGMENT_HEADER_BYTES) return { ok: false, reason: 'short' };
  if (!buf.subarray(0, 8).equals(SEGMENT_MAGIC)) return { ok: false, reason: 'bad-magic' };
  if (buf.readUInt32LE(28) !== crc32(buf.subarray(0, 28))) return { ok: false, reason: 'bad-crc' };
  const version = buf.readUInt16LE(8);
  if (version !== SEGMENT_FORMAT_VERSION) return { ok: false, reason: 'unsupported-version', version };
  if (buf.readUInt16LE(10) !== SEGMENT_HEADER_BYTES || buf.readUInt32LE(12) !== RECORD_HEADER_BYTES) {
    return { ok: false, reason: 'bad-layout' };
  }
  const baseSeq = readU64(buf, 16);
  if (baseSeq < 0) return { ok: false, reason: 'bad-layout' };
  return { ok: true, baseSeq };
}

/**
 * Encodes one record at `off` and returns its total size. `target` must have room for
 * RECORD_HEADER_BYTES + payload.length bytes.
 */
export function encodeRecord(
  target: Buffer,
  off: number,
  seq: number,
  receivedAtUs: number | bigint,
  payload: Uint8Array,
): number {
  const len = payload.length;
  target.writeUInt32LE(len, off + 4);
  writeU64(target, off + 8, seq);
  if (typeof receivedAtUs === 'bigint') target.writeBigUInt64LE(receivedAtUs, off + 16);
  else writeU64(target, off + 16, receivedAtUs);
  target.set(payload, off + RECORD_HEADER_BYTES);
  const end = off + RECORD_HEADER_BYTES + len;
  target.writeUInt32LE(crc32(target.subarray(off + 4, end)), off);
  return end - off;
}

export type RecordStatus = 'ok' | 'short-header' | 'bad-length' | 'short-payload' | 'bad-crc' | 'bad-seq';

/** Reused by the caller to keep the scan of a 16 MiB segment allocation-free. */
export interface RecordView {
  seq: number;
  payloadStart: number;
  payloadLength: number;
  end: number;
}

export function newRecordView(): RecordView {
  return { seq: 0, payloadStart: 0, payloadLength: 0, end: 0 };
}

/** Validates the record starting at `off` (bytes up to `limit` are available) and fills `view`. */
export function readRecordAt(buf: Buffer, off: number, limit: number, view: RecordView): RecordStatus {
  if (off + RECORD_HEADER_BYTES > limit) return 'short-header';
  const len = buf.readUInt32LE(off + 4);
  if (len > MAX_PAYLOAD_BYTES) return 'bad-length';
  const end = off + RECORD_HEADER_BYTES + len;
  if (end > limit) return 'short-payload';
  if (buf.readUInt32LE(off) !== crc32(buf.subarray(off + 4, end))) return 'bad-crc';
  const seq = readU64(buf, off + 8);
  if (seq < 1 || seq > MAX_SEQ) return 'bad-seq';
  view.seq = seq;
  view.payloadStart = off + RECORD_HEADER_BYTES;
  view.payloadLength = len;
  view.end = end;
  return 'ok';
}

export function readReceivedAtUs(buf: Buffer, recordOff: number): bigint {
  return buf.readBigUInt64LE(recordOff + 16);
}

export interface SegmentCorruption {
  /** Byte offset in the segment of the first byte that did not parse. */
  readonly offset: number;
  readonly reason: RecordStatus;
  /** Bytes skipped until the next verifiable record (or to the end of the segment). */
  readonly skippedBytes: number;
  /** Seqs missing between the last good record before and the first good record after. */
  readonly lostRecords: number;
}

export interface SegmentScan {
  readonly records: number;
  /** Seq of the first/last good record; baseSeq - 1 for lastSeq when there are none. */
  readonly firstSeq: number;
  readonly lastSeq: number;
  /** End of the last good record: where a torn tail would be cut. */
  readonly goodEnd: number;
  /** Corruptions followed by at least one good record (the scan resynchronised past them). */
  readonly corruptions: readonly SegmentCorruption[];
  /** Unparseable bytes after the last good record, if any. */
  readonly tail: { readonly offset: number; readonly reason: RecordStatus } | null;
}

/**
 * Walks the records of a segment image, verifying CRCs and seq continuity. `onRecord` is told about
 * every good record (with `afterGap` set for the first record after a corruption) so the caller can
 * build its index without a second pass.
 *
 * A corrupt record is not the end of the story: a bit flip in one record must not cost the rest of
 * the segment, so the scan searches forward for the next offset holding a record that passes its CRC
 * and carries a plausible seq. Only when nothing verifiable follows is the rest reported as `tail`.
 */
export function scanSegment(
  buf: Buffer,
  baseSeq: number,
  onRecord: (seq: number, offset: number, afterGap: boolean) => void,
): SegmentScan {
  const view = newRecordView();
  const corruptions: SegmentCorruption[] = [];
  let off = SEGMENT_HEADER_BYTES;
  let expected = baseSeq;
  let records = 0;
  let firstSeq = -1;
  let afterGap = false;
  let tail: SegmentScan['tail'] = null;
  while (off < buf.length) {
    const status = readRecordAt(buf, off, buf.length, view);
    if (status === 'ok' && view.seq === expected) {
      if (firstSeq < 0) firstSeq = view.seq;
      onRecord(view.seq, off, afterGap);
      afterGap = false;
      records++;
      expected = view.seq + 1;
      off = view.end;
      continue;
    }
    const reason: RecordStatus = status === 'ok' ? 'bad-seq' : status;
    const next = resync(buf, off, expected, view);
    if (next < 0) {
      tail = { offset: off, reason };
      break;
    }
    corruptions.push({ offset: off, reason, skippedBytes: next - off, lostRecords: view.seq - expected });
    // readRecordAt left the resynced record in `view`; the loop re-reads it, which is cheap.
    expected = view.seq;
    afterGap = true;
    off = next;
  }
  return {
    records,
    firstSeq: firstSeq < 0 ? baseSeq : firstSeq,
    lastSeq: expected - 1,
    goodEnd: tail ? tail.offset : buf.length,
    corruptions,
    tail,
  };
}

/**
 * Next offset after `badOff` holding a verifiable record whose seq is consistent with the bytes
 * skipped (each lost record occupies at least a record header). Returns -1 when there is none.
 */
function resync(buf: Buffer, badOff: number, expected: number, view: RecordView): number {
  const last = buf.length - RECORD_HEADER_BYTES;
  for (let p = badOff + 1; p <= last; p++) {
    // Cheap filters first: zero-filled or random regions almost never pass the length and seq
    // checks, so the CRC is computed only for plausible candidates.
    const len = buf.readUInt32LE(p + 4);
    if (len > MAX_PAYLOAD_BYTES || p + RECORD_HEADER_BYTES + len > buf.length) continue;
    const seq = readU64(buf, p + 8);
    if (seq < expected || seq - expected > (p - badOff) / RECORD_HEADER_BYTES) continue;
    if (readRecordAt(buf, p, buf.length, view) === 'ok') return p;
  }
  return -1;
}
