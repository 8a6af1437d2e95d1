// One segment file as the spool keeps it in memory: where its records start and end, how much of it
// is on disk, its open file handle and its sparse index. Every part of the spool (writer, readers,
// acknowledgements, eviction, recovery) works on these records; this file is the one definition, with
// the few facts about a segment that more than one part needs.
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { segmentFileName } from './record-format.ts';
import { INDEX_INITIAL_ENTRIES } from './sparse-index.ts';
import type { SparseIndex } from './sparse-index.ts';

export interface Segment extends SparseIndex {
  readonly name: string;
  readonly path: string;
  readonly baseSeq: number;
  count: number;
  firstSeq: number;
  /** baseSeq - 1 while empty. */
  lastSeq: number;
  /** Bytes assigned, including records still buffered. */
  size: number;
  /** Bytes written and fsynced, and the last seq among them. */
  durableSize: number;
  durableLastSeq: number;
  fh: FileHandle | null;
  /** I/O in flight on fh; a deleted segment's fh is closed when this drops to 0. */
  busy: number;
  deleted: boolean;
}

export function newSegment(dir: string, baseSeq: number, size: number): Segment {
  const name = segmentFileName(baseSeq);
  return {
    name,
    path: join(dir, name),
    baseSeq,
    count: 0,
    firstSeq: baseSeq,
    lastSeq: baseSeq - 1,
    size,
    durableSize: size,
    durableLastSeq: baseSeq - 1,
    fh: null,
    busy: 0,
    deleted: false,
    idxSeq: new Uint32Array(INDEX_INITIAL_ENTRIES),
    idxOff: new Uint32Array(INDEX_INITIAL_ENTRIES),
    idxLen: 0,
  };
}

/** Ends one piece of I/O on `seg` (busy was raised for it); closes the file of a deleted segment. */
export function releaseSegment(seg: Segment): void {
  seg.busy--;
  if (seg.busy === 0 && seg.deleted) void closeSegmentFile(seg);
}

export async function closeSegmentFile(seg: Segment): Promise<void> {
  const fh = seg.fh;
  seg.fh = null;
  await fh?.close().catch(() => {});
}

/** Records in `seg` with seq > acked (exact unless a corruption gap sits inside the segment). */
export function unackedIn(seg: Segment, acked: number): number {
  if (seg.count === 0 || seg.lastSeq <= acked) return 0;
  if (seg.firstSeq > acked) return seg.count;
  return Math.min(seg.count, seg.lastSeq - acked);
}
