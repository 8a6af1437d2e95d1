// The sparse index of a segment: one (seq, byte offset) entry for every `indexStride`-th record, so a
// reader starting at a given seq seeks near it instead of scanning the segment from its header, and a
// reader that meets damaged bytes can skip to the next record known to start cleanly. Kept in two
// growable Uint32Arrays on the segment itself (seqs relative to the segment's base seq; offsets fit
// because a segment is at most 1 GiB), so adding an entry on the append path allocates nothing.
import { SEGMENT_HEADER_BYTES } from './record-format.ts';

/** The index fields of a segment (see segment.ts). */
export interface SparseIndex {
  readonly baseSeq: number;
  /** seq - baseSeq of each entry, ascending. */
  idxSeq: Uint32Array;
  /** Byte offset in the segment file of each entry's record. */
  idxOff: Uint32Array;
  idxLen: number;
}

/** Entries an index starts with room for; it doubles when full. */
export const INDEX_INITIAL_ENTRIES = 16;

export function addIndexEntry(seg: SparseIndex, seq: number, offset: number): void {
  if (seg.idxLen === seg.idxSeq.length) {
    const seqs = new Uint32Array(seg.idxLen * 2);
    const offs = new Uint32Array(seg.idxLen * 2);
    seqs.set(seg.idxSeq);
    offs.set(seg.idxOff);
    seg.idxSeq = seqs;
    seg.idxOff = offs;
  }
  seg.idxSeq[seg.idxLen] = seq - seg.baseSeq;
  seg.idxOff[seg.idxLen] = offset;
  seg.idxLen++;
}

/** Offset of the last indexed record with seq ≤ `seq` (or of the first record). */
export function indexLookup(seg: SparseIndex, seq: number): number {
  const target = seq - seg.baseSeq;
  let lo = 0;
  let hi = seg.idxLen - 1;
  let found = 0;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if ((seg.idxSeq[mid] ?? 0) <= target) {
      found = mid;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  return seg.idxLen === 0 ? SEGMENT_HEADER_BYTES : (seg.idxOff[found] ?? SEGMENT_HEADER_BYTES);
}

/** Offset of the first indexed record after `offset`, or -1 when there is none. */
export function nextIndexedOffset(seg: SparseIndex, offset: number): number {
  for (let i = 0; i < seg.idxLen; i++) {
    const o = seg.idxOff[i] ?? 0;
    if (o > offset) return o;
  }
  return -1;
}
