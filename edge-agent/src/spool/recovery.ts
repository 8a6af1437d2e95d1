// Recovery: what Spool.open() makes of whatever a crash (or damage) left in the directory. Every
// segment is scanned and its records verified (CRC, consecutive seqs); a torn tail of the newest
// segment is cut off, a segment created just before a crash with nothing durable in it is removed, a
// segment nothing can be read from is renamed *.corrupt for forensics, and damage in the middle is
// counted and skipped. From the segments left and state.json it works out the next seq, which can
// never hand out a seq that was reported durable before.
import { readdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { changeFileDurably } from '../fs/fsync.ts';
import { SpoolFormatError } from './errors.ts';
import type { ResolvedOptions } from './options.ts';
import { SEGMENT_HEADER_BYTES, checkSegmentHeader, parseSegmentFileName, scanSegment } from './record-format.ts';
import { newSegment } from './segment.ts';
import type { Segment } from './segment.ts';
import { addIndexEntry } from './sparse-index.ts';
import { readSpoolState } from './spool-state.ts';

export interface RecoveredCorruption {
  readonly segment: string;
  readonly offset: number;
  readonly reason: string;
  readonly skippedBytes: number;
  /** Records known to be missing (from the seq gap); 0 when it cannot be told. */
  readonly lostRecords: number;
}

/** What open() found and repaired. */
export interface SpoolRecovery {
  readonly segments: number;
  /** Good records found on disk. */
  readonly records: number;
  /** Bytes cut off the end of the newest segment (a torn tail from a crash). */
  readonly truncatedBytes: number;
  /** Records lost to corruption in the middle of the spool (not to a torn tail). */
  readonly corruptRecords: number;
  readonly corruptions: readonly RecoveredCorruption[];
  /** Files deleted because they held nothing durable (e.g. a segment created just before a crash). */
  readonly removedFiles: readonly string[];
  /** Segments renamed to *.corrupt because nothing in them could be read. */
  readonly quarantinedFiles: readonly string[];
  readonly nextSeq: bigint;
  readonly ackedSeq: bigint;
}

/** The spool as recovery left it: the segments to keep (files not open yet) and where seqs stand. */
export interface RecoveredSpool {
  readonly segments: Segment[];
  readonly nextSeq: number;
  readonly ackedSeq: number;
  readonly highWaterSeq: number;
  /** The newest segment may be appended to (intact, with room, and its seqs line up). */
  readonly reuseLast: boolean;
  readonly recovery: SpoolRecovery;
}

/** Recovers the spool in `dir` (locked by the caller): see the file comment. */
export async function recoverSpool(dir: string, opts: ResolvedOptions): Promise<RecoveredSpool> {
  const state = await readSpoolState(dir);
  const found = await recoverSegments(dir, opts);
  const segments = found.segments;
  const lastGood = segments.reduce((m, s) => (s.count > 0 ? Math.max(m, s.lastSeq) : m), 0);
  const ackedSeq = state?.ackedSeq ?? 0;
  const highWaterSeq = state?.highWaterSeq ?? 0;
  const nextSeq = Math.max(lastGood, highWaterSeq, ackedSeq) + 1;

  // Keep appending to the newest segment only when it is intact, has room and its seqs line
  // up; anything else gets a fresh segment so a segment's seqs stay consecutive.
  const last = segments.at(-1);
  const reusable =
    last !== undefined &&
    found.cleanNames.has(last.name) &&
    last.size < opts.segmentBytes &&
    last.lastSeq + 1 === nextSeq;
  if (last && !reusable && last.count === 0) {
    await rm(last.path, { force: true });
    found.removedFiles.push(last.name);
    segments.pop();
  }

  const recovery: SpoolRecovery = {
    segments: segments.length,
    records: found.records,
    truncatedBytes: found.truncatedBytes,
    corruptRecords: found.corruptions.reduce((n, c) => n + c.lostRecords, 0),
    corruptions: found.corruptions,
    removedFiles: found.removedFiles,
    quarantinedFiles: found.quarantinedFiles,
    nextSeq: BigInt(nextSeq),
    ackedSeq: BigInt(ackedSeq),
  };
  return { segments, nextSeq, ackedSeq, highWaterSeq, reuseLast: reusable, recovery };
}

interface RecoveredSegments {
  segments: Segment[];
  /** Segments with an intact header and no corruption: only these may be appended to. */
  cleanNames: Set<string>;
  records: number;
  truncatedBytes: number;
  corruptions: RecoveredCorruption[];
  removedFiles: string[];
  quarantinedFiles: string[];
}

async function recoverSegments(dir: string, opts: ResolvedOptions): Promise<RecoveredSegments> {
  const out: RecoveredSegments = {
    segments: [],
    cleanNames: new Set(),
    records: 0,
    truncatedBytes: 0,
    corruptions: [],
    removedFiles: [],
    quarantinedFiles: [],
  };
  const files = (await readdir(dir))
    .map((name) => ({ name, baseSeq: parseSegmentFileName(name) }))
    .filter((f): f is { name: string; baseSeq: number } => f.baseSeq !== null)
    .sort((a, b) => a.baseSeq - b.baseSeq);

  for (let i = 0; i < files.length; i++) {
    const file = files[i];
    if (!file) continue;
    const { name, baseSeq } = file;
    const next = files[i + 1];
    const isLast = next === undefined;
    const path = join(dir, name);
    const buf = await readFile(path);
    const header = checkSegmentHeader(buf);
    if (!header.ok && header.reason === 'unsupported-version') {
      throw new SpoolFormatError(`${path} has segment format version ${header.version}; this agent reads version 1`);
    }
    const headerOk = header.ok && header.baseSeq === baseSeq;
    const prev = out.segments.at(-1);

    const seg = newSegment(dir, baseSeq, buf.length);
    let n = 0;
    const scan =
      buf.length >= SEGMENT_HEADER_BYTES && buf.length <= 0xffff_ffff
        ? scanSegment(buf, baseSeq, (seq, offset, afterGap) => {
            if (afterGap || n % opts.indexStride === 0) addIndexEntry(seg, seq, offset);
            n++;
          })
        : null;
    const overlaps = prev !== undefined && baseSeq <= prev.lastSeq;

    if (!scan || scan.records === 0 || overlaps) {
      if (isLast && !overlaps) {
        if (headerOk) {
          // An empty or wholly torn newest segment: keep it, emptied.
          if (buf.length > SEGMENT_HEADER_BYTES) await truncateFile(path, SEGMENT_HEADER_BYTES);
          out.truncatedBytes += buf.length - SEGMENT_HEADER_BYTES;
          seg.size = seg.durableSize = SEGMENT_HEADER_BYTES;
          out.segments.push(seg);
          out.cleanNames.add(name);
        } else {
          // Created just before a crash: its first write (header and first records) never made it
          // to disk whole, and nothing in it verifies, so nothing in it was ever reported durable.
          await rm(path, { force: true });
          out.removedFiles.push(name);
          out.truncatedBytes += buf.length;
        }
        continue;
      }
      if (!overlaps && headerOk && scan?.tail === null) {
        seg.size = seg.durableSize = SEGMENT_HEADER_BYTES;
        out.segments.push(seg); // empty and sealed: deleted once acked past
        continue;
      }
      await rename(path, `${path}.corrupt`);
      out.quarantinedFiles.push(name);
      out.corruptions.push({
        segment: name,
        offset: 0,
        reason: overlaps ? 'overlapping-seqs' : headerOk ? 'no-readable-records' : 'bad-segment-header',
        skippedBytes: buf.length,
        lostRecords: next && !overlaps ? Math.max(0, next.baseSeq - baseSeq) : 0,
      });
      continue;
    }

    if (!headerOk) {
      // Each record carries its own CRC and seq, so a damaged header costs nothing else.
      out.corruptions.push({ segment: name, offset: 0, reason: 'bad-segment-header', skippedBytes: 0, lostRecords: 0 });
    }
    for (const c of scan.corruptions) out.corruptions.push({ segment: name, ...c });
    let size = buf.length;
    if (scan.tail) {
      if (isLast) {
        await truncateFile(path, scan.tail.offset);
        out.truncatedBytes += buf.length - scan.tail.offset;
        size = scan.tail.offset;
      } else {
        // Writes to an older segment are fsynced before a newer one exists, so this is not a torn
        // write but damage; the bytes stay for inspection.
        out.corruptions.push({
          segment: name,
          offset: scan.tail.offset,
          reason: scan.tail.reason,
          skippedBytes: buf.length - scan.tail.offset,
          lostRecords: Math.max(0, next.baseSeq - (scan.lastSeq + 1)),
        });
      }
    }
    seg.count = scan.records;
    seg.firstSeq = scan.firstSeq;
    seg.lastSeq = seg.durableLastSeq = scan.lastSeq;
    seg.size = seg.durableSize = size;
    out.records += scan.records;
    out.segments.push(seg);
    if (headerOk && scan.corruptions.length === 0 && (scan.tail === null || isLast)) out.cleanNames.add(name);
  }
  return out;
}

function truncateFile(path: string, length: number): Promise<void> {
  return changeFileDurably(path, 'r+', (fh) => fh.truncate(length));
}
