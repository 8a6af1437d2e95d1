/**
 * Durable on-disk spool for MAVLink frames between the edge agent's sources and the gRPC uplink.
 *
 * Directory layout (one directory per dataset / stream key, chosen by the caller):
 *
 *   <dir>/00000000000000000001.seg   segment files, named by the first seq they were opened for
 *   <dir>/state.json                 acknowledged offset + high-water seq (replaced atomically)
 *   <dir>/LOCK                       "<pid> <boot id>" of the process that has the spool open
 *   <dir>/*.seg.corrupt              segments recovery could not read at all (kept for forensics)
 *
 * Segment file, all integers little-endian:
 *
 *   offset size  segment header (32 bytes)
 *        0    8  magic "SORTIESP"
 *        8    2  format version = 1
 *       10    2  segment header length = 32
 *       12    4  record header length = 24
 *       16    8  base seq (uint64): seq of the first record in this segment
 *       24    4  reserved, 0
 *       28    4  CRC-32 (zlib polynomial) of bytes 0..27
 *
 *   then records back to back until the end of the file, each:
 *        0    4  CRC-32 of bytes 4 .. 24+length-1 (rest of the header and the payload)
 *        4    4  payload length (uint32, ≤ 1 MiB)
 *        8    8  seq (uint64): monotonic per spool, survives restarts; this is the frame_seq
 *       16    8  receive timestamp, µs (uint64), as given by the caller
 *       24    n  payload: one MAVLink frame, unmodified
 *
 * Within a segment, seqs are consecutive (base seq, base seq + 1, ...); a jump is treated as
 * corruption. A segment is rolled when the next record would push it past `segmentBytes`.
 *
 * Durability: appends are buffered and written by group commit (one write and one fdatasync per
 * segment per batch). A batch that crosses a roll fsyncs the old segment before the new file is even
 * created, and fsyncs the directory after creating it, so a crash can only tear the tail of the
 * newest segment. Readers only ever see records whose batch is on disk: a frame that reached the
 * cloud can never be lost in a crash and have its seq handed to a different frame afterwards (the
 * server would silently collapse the new frame onto the old row).
 *
 * state.json: {"format":"sortie-spool-state","version":1,"ackedSeq":"<n>","highWaterSeq":"<n>"}
 * (seqs as decimal strings). Written by temp file + fsync + rename + directory fsync, batched on a
 * timer rather than once per ack. A segment is deleted only once the *persisted* acked seq covers
 * all of it, so nextSeq can always be rebuilt from what is on disk.
 *
 * Full policy (`fullPolicy`, bound `maxBytes` over all segments including buffered bytes):
 *   'drop-oldest' (default): delete the oldest segments, acknowledged ones first, and count the
 *     unacknowledged records lost in stats().dropped with a 'warning' event. A flight-test team
 *     wants the flight that is happening now: the oldest unacknowledged frames are the ones the
 *     uplink has already failed to deliver for longest, they also exist in the autopilot's own
 *     onboard log, and the end of a flight (the landing, the incident) is what is most often
 *     looked at. Rejecting new frames would keep stale data and lose exactly that.
 *   'reject-new': append() throws SpoolFullError and nothing already spooled is touched; for a
 *     replay/upload of a recorded flight, where the source can be paused and resumed.
 * In both cases fully acknowledged segments are reclaimed first. Segments whose bytes are still
 * being written cannot be dropped, so under 'drop-oldest' the bound can be exceeded by what is
 * buffered (at most one flush batch plus a partly written segment); maxBytes ≥ 2 × segmentBytes.
 */
import { EventEmitter } from 'node:events';
import { mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { changeFileDurably } from '../fs/fsync.ts';
import { withDefaults } from '../core/option-defaults.ts';
import { acquireDirLock } from './dir-lock.ts';
import type { DirLock } from './dir-lock.ts';
import {
  MAX_PAYLOAD_BYTES,
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
import { readSpoolState, writeSpoolState } from './spool-state.ts';

export type FullPolicy = 'drop-oldest' | 'reject-new';

export interface SpoolOptions {
  /** Spool directory; created if missing. One per dataset / stream key. */
  readonly dir: string;
  /** Roll to a new segment file at this size. Default 16 MiB. */
  readonly segmentBytes?: number;
  /** Bound on all segments, buffered bytes included. Default 1 GiB; at least 2 × segmentBytes. */
  readonly maxBytes?: number;
  /** What to do when maxBytes would be exceeded. Default 'drop-oldest' (see the file comment). */
  readonly fullPolicy?: FullPolicy;
  /** Group-commit window: buffered records are written at most this long after the first. Default 10 ms. */
  readonly flushIntervalMs?: number;
  /** Flush as soon as this many bytes are buffered. Default 1 MiB. */
  readonly flushBytes?: number;
  /** Acks are persisted at most this long after ack(). Default 100 ms. */
  readonly ackPersistIntervalMs?: number;
  /** append() throws when this much is buffered and not yet on disk (disk stalled). Default 64 MiB. */
  readonly maxPendingBytes?: number;
  /** One in-memory index entry (seq → byte offset) per this many records. Default 64. */
  readonly indexStride?: number;
}

export interface SpoolRecord {
  readonly seq: bigint;
  readonly receivedAtUs: bigint;
  readonly payload: Buffer;
}

export interface SpoolStats {
  /** Records appended / made durable / newly acknowledged by this process since open. */
  readonly appended: number;
  readonly flushed: number;
  readonly acked: number;
  /** Unacknowledged records held (on disk or buffered). */
  readonly pending: number;
  /** Unacknowledged records deleted by the 'drop-oldest' policy since open. */
  readonly dropped: number;
  /** Appends refused with SpoolFullError since open. */
  readonly rejected: number;
  readonly bytesOnDisk: number;
  readonly bufferedBytes: number;
  readonly segments: number;
  /** Group-commit batches written, and fsync/fdatasync calls they cost. */
  readonly batches: number;
  readonly fsyncs: number;
  readonly nextSeq: bigint;
  readonly durableSeq: bigint;
  readonly ackedSeq: bigint;
}

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

export type SpoolWarning =
  | {
      readonly kind: 'dropped-oldest';
      readonly segment: string;
      /** Unacknowledged records lost. */
      readonly records: number;
      readonly firstSeq: bigint;
      readonly lastSeq: bigint;
    }
  | { readonly kind: 'over-budget'; readonly bytes: number; readonly maxBytes: number }
  | { readonly kind: 'corrupt-read'; readonly segment: string; readonly offset: number; readonly reason: string }
  | { readonly kind: 'unlink-failed'; readonly segment: string; readonly error: unknown }
  | { readonly kind: 'state-persist-failed'; readonly error: unknown };

type SpoolEvents = {
  warning: [SpoolWarning];
  /** A write or fsync failed: the spool is unusable and must be closed and reopened (which recovers). */
  error: [Error];
};

export class SpoolFullError extends Error {
  override readonly name = 'SpoolFullError';
  readonly reason: 'max-bytes' | 'max-pending';
  constructor(reason: 'max-bytes' | 'max-pending', message: string) {
    super(message);
    this.reason = reason;
  }
}

export class SpoolClosedError extends Error {
  override readonly name = 'SpoolClosedError';
}

export class SpoolFormatError extends Error {
  override readonly name = 'SpoolFormatError';
}

const MiB = 1024 * 1024;
const DEFAULTS = {
  segmentBytes: 16 * MiB,
  maxBytes: 1024 * MiB,
  fullPolicy: 'drop-oldest',
  flushIntervalMs: 10,
  flushBytes: 1 * MiB,
  ackPersistIntervalMs: 100,
  maxPendingBytes: 64 * MiB,
  indexStride: 64,
} as const;
/** Index offsets are uint32. */
const MAX_SEGMENT_BYTES = 1024 * MiB;
const READ_CHUNK_BYTES = 64 * 1024;
const MAX_U64 = 0xffff_ffff_ffff_ffffn;

interface Segment {
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
  /** Sparse index: seq - baseSeq and byte offset, ascending. */
  idxSeq: Uint32Array;
  idxOff: Uint32Array;
  idxLen: number;
}

interface Chunk {
  readonly seg: Segment;
  readonly start: number;
  end: number;
  /** Offset in the segment file where buf[start] goes. */
  readonly filePos: number;
  lastSeq: number;
  readonly createsFile: boolean;
}

interface Batch {
  buf: Buffer;
  used: number;
  records: number;
  lastSeq: number;
  chunks: Chunk[];
}

interface DurableWaiter {
  readonly seq: number;
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
}

type ResolvedOptions = { -readonly [K in keyof Required<Omit<SpoolOptions, 'dir'>>]: Required<SpoolOptions>[K] };

export class Spool extends EventEmitter<SpoolEvents> {
  readonly dir: string;
  readonly recovery: SpoolRecovery;

  readonly #opts: ResolvedOptions;
  readonly #lock: DirLock;
  readonly #dirHandle: FileHandle;
  /** Oldest first; the last one is #active. */
  readonly #segments: Segment[];
  #active: Segment;
  #totalBytes: number;

  #nextSeq: number;
  #durableSeq: number;
  #ackedSeq: number;
  #persistedAckedSeq: number;
  #persistedHighWater: number;

  #fill: Batch;
  #spare: Batch | null = null;
  #inFlightBytes = 0;
  #flushTimer: NodeJS.Timeout | null = null;
  #flushWanted = false;
  #flushRunning = false;
  #kickScheduled = false;
  #driving: Promise<void> | null = null;
  #waiters: DurableWaiter[] = [];
  #waitersHead = 0;
  readonly #tailWaiters = new Set<() => void>();

  #ackTimer: NodeJS.Timeout | null = null;
  #persisting: Promise<void> | null = null;
  readonly #background = new Set<Promise<void>>();
  readonly #reads = new Set<Promise<unknown>>();
  #overBudgetWarned = false;

  #failed: Error | null = null;
  #closing = false;
  #closed = false;
  #readsClosed = false;
  #closePromise: Promise<void> | null = null;

  #appended = 0;
  #flushed = 0;
  #ackedCount = 0;
  #dropped = 0;
  #rejected = 0;
  #batches = 0;
  #fsyncs = 0;

  private constructor(init: {
    dir: string;
    opts: ResolvedOptions;
    lock: DirLock;
    dirHandle: FileHandle;
    segments: Segment[];
    nextSeq: number;
    ackedSeq: number;
    highWaterSeq: number;
    reuseLast: boolean;
    recovery: SpoolRecovery;
  }) {
    super();
    this.dir = init.dir;
    this.#opts = init.opts;
    this.#lock = init.lock;
    this.#dirHandle = init.dirHandle;
    this.#segments = init.segments;
    this.#totalBytes = init.segments.reduce((n, s) => n + s.size, 0);
    this.#nextSeq = init.nextSeq;
    this.#durableSeq = init.nextSeq - 1;
    this.#ackedSeq = init.ackedSeq;
    this.#persistedAckedSeq = init.ackedSeq;
    this.#persistedHighWater = init.highWaterSeq;
    this.#fill = newBatch(Math.min(this.#opts.flushBytes, 256 * 1024));
    this.recovery = init.recovery;
    const last = init.segments.at(-1);
    if (last && init.reuseLast) {
      this.#active = last;
    } else {
      this.#active = this.#startSegment();
    }
  }

  /**
   * Opens (creating if needed) the spool in `options.dir`, recovering from whatever a crash left:
   * see `recovery` on the result. Throws SpoolLockedError if another live process has it open.
   */
  static async open(options: SpoolOptions): Promise<Spool> {
    const opts = resolveOptions(options);
    const dir = options.dir;
    await mkdir(dir, { recursive: true });
    const lock = await acquireDirLock(dir);
    let dirHandle: FileHandle | null = null;
    const segments: Segment[] = [];
    try {
      dirHandle = await open(dir, 'r');
      const state = await readSpoolState(dir);
      const found = await recoverSegments(dir, opts);
      segments.push(...found.segments);
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
      for (const s of segments) s.fh = await open(s.path, 'r+');

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
      const spool: Spool = new Spool({
        dir,
        opts,
        lock,
        dirHandle,
        segments,
        nextSeq,
        ackedSeq,
        highWaterSeq,
        reuseLast: reusable,
        recovery,
      });
      await Promise.all(spool.#deleteAckedSegments());
      return spool;
    } catch (err) {
      for (const s of segments) await s.fh?.close().catch(() => {});
      await dirHandle?.close().catch(() => {});
      await lock.release();
      throw err;
    }
  }

  /** Seq the next append will get. */
  get nextSeq(): bigint {
    return BigInt(this.#nextSeq);
  }

  /** Every record with seq ≤ durableSeq is on disk (or was dropped by policy). */
  get durableSeq(): bigint {
    return BigInt(this.#durableSeq);
  }

  get ackedSeq(): bigint {
    return BigInt(this.#ackedSeq);
  }

  /**
   * Buffers one frame and returns its seq. Not durable until a flush: use appendDurable() or
   * flush() to know. Throws SpoolFullError under 'reject-new' when full, or when the disk has
   * fallen maxPendingBytes behind.
   */
  append(payload: Uint8Array, receivedAtUs: bigint | number): bigint {
    if (this.#failed) throw this.#failed;
    if (this.#closing) throw new SpoolClosedError('spool is closed');
    const len = payload.length;
    if (len > MAX_PAYLOAD_BYTES) throw new RangeError(`payload of ${len} bytes exceeds ${MAX_PAYLOAD_BYTES}`);
    if (
      typeof receivedAtUs === 'bigint'
        ? receivedAtUs < 0n || receivedAtUs > MAX_U64
        : !Number.isSafeInteger(receivedAtUs) || receivedAtUs < 0
    ) {
      throw new RangeError(`receivedAtUs must be a uint64, got ${receivedAtUs}`);
    }
    const recBytes = RECORD_HEADER_BYTES + len;
    let seg = this.#active;
    const roll = seg.count > 0 && seg.size + recBytes > this.#opts.segmentBytes;
    const need = recBytes + (roll ? SEGMENT_HEADER_BYTES : 0);
    if (this.#fill.used + this.#inFlightBytes + need > this.#opts.maxPendingBytes) {
      this.#rejected++;
      throw new SpoolFullError('max-pending', `${this.#fill.used + this.#inFlightBytes} bytes not yet on disk`);
    }
    if (this.#totalBytes + need > this.#opts.maxBytes) this.#makeRoom(need);
    if (roll) seg = this.#startSegment();

    const seq = this.#nextSeq++;
    const batch = this.#fill;
    let chunk = batch.chunks.at(-1);
    if (chunk?.seg !== seg) {
      chunk = { seg, start: batch.used, end: batch.used, filePos: seg.size, lastSeq: seq, createsFile: false };
      batch.chunks.push(chunk);
    }
    ensureRoom(batch, recBytes);
    encodeRecord(batch.buf, batch.used, seq, receivedAtUs, payload);
    const recordOffset = seg.size;
    batch.used += recBytes;
    batch.records++;
    batch.lastSeq = seq;
    chunk.end = batch.used;
    chunk.lastSeq = seq;
    if (seg.count === 0) seg.firstSeq = seq;
    if (seg.count % this.#opts.indexStride === 0) addIndexEntry(seg, seq, recordOffset);
    seg.count++;
    seg.lastSeq = seq;
    seg.size += recBytes;
    this.#totalBytes += recBytes;
    this.#appended++;

    if (batch.used >= this.#opts.flushBytes) this.#requestFlush();
    else if (this.#flushTimer === null) this.#flushTimer = setTimeout(this.#onFlushTimer, this.#opts.flushIntervalMs);
    return BigInt(seq);
  }

  /** append() and wait until the record is on disk. Concurrent callers share one fsync. */
  async appendDurable(payload: Uint8Array, receivedAtUs: bigint | number): Promise<bigint> {
    const seq = this.append(payload, receivedAtUs);
    await this.#waitDurable(Number(seq));
    return seq;
  }

  /** Resolves once every record appended before the call is on disk. */
  async flush(): Promise<void> {
    if (this.#failed) throw this.#failed;
    if (this.#closed) throw new SpoolClosedError('spool is closed');
    await this.#waitDurable(this.#nextSeq - 1);
  }

  /**
   * Marks every record with seq ≤ `seq` acknowledged by the cloud. Persisted in the background
   * (batched, ackPersistIntervalMs); persistAcks() forces it. Lower values than the current acked
   * seq are ignored; acknowledging a seq that was never made durable is a caller bug and throws.
   */
  ack(seq: bigint): void {
    if (this.#closed) throw new SpoolClosedError('spool is closed');
    if (seq <= BigInt(this.#ackedSeq)) return;
    if (seq > BigInt(this.#durableSeq)) {
      throw new RangeError(`cannot ack seq ${seq}: only seqs up to ${this.#durableSeq} are durable`);
    }
    const n = Number(seq);
    for (const s of this.#segments) {
      if (s.lastSeq <= this.#ackedSeq) continue;
      if (s.firstSeq > n) break;
      this.#ackedCount += unackedIn(s, this.#ackedSeq) - unackedIn(s, n);
    }
    this.#ackedSeq = n;
    if (this.#ackTimer === null && !this.#closing) {
      this.#ackTimer = setTimeout(() => {
        this.#ackTimer = null;
        this.persistAcks().catch((error: unknown) => this.emit('warning', { kind: 'state-persist-failed', error }));
      }, this.#opts.ackPersistIntervalMs);
    }
  }

  /** Writes the acked offset and high-water seq now, then deletes fully acknowledged segments. */
  async persistAcks(): Promise<void> {
    if (this.#closed) throw new SpoolClosedError('spool is closed');
    const previous = this.#persisting;
    const run = (async () => {
      await previous?.catch(() => {});
      await this.#persistStateOnce();
    })();
    this.#persisting = run;
    try {
      await run;
    } finally {
      if (this.#persisting === run) this.#persisting = null;
    }
  }

  /**
   * Up to `maxRecords` durable records with seq > afterSeq, in seq order. Records already acked
   * but not yet deleted are returned too; records dropped by policy are skipped (the seq gap shows).
   */
  async readFrom(afterSeq: bigint, maxRecords = 1000): Promise<SpoolRecord[]> {
    return (await this.#read(afterSeq, maxRecords)).records;
  }

  /**
   * Async iterator over durable records after `afterSeq` (default: the acked seq when iteration
   * starts) that keeps following the tail as new batches become durable. Ends when the spool is
   * closed or `signal` aborts.
   */
  async *records(options: { afterSeq?: bigint; batchSize?: number; signal?: AbortSignal } = {}): AsyncGenerator<
    SpoolRecord,
    void,
    undefined
  > {
    const { signal } = options;
    const batchSize = options.batchSize ?? 512;
    let after = options.afterSeq ?? BigInt(this.#ackedSeq);
    while (!this.#closing && !signal?.aborted) {
      if (this.#failed) throw this.#failed;
      let got: { records: SpoolRecord[]; limit: number };
      try {
        got = await this.#read(after, batchSize);
      } catch (err) {
        if (err instanceof SpoolClosedError) return;
        throw err;
      }
      const last = got.records.at(-1);
      if (last) {
        for (const r of got.records) yield r;
        after = last.seq;
        continue;
      }
      // Nothing live up to `limit` (dropped by policy, or lost): don't ask for it again.
      if (BigInt(got.limit) > after) {
        after = BigInt(got.limit);
        continue;
      }
      await this.#waitForNewer(got.limit, signal);
    }
  }

  stats(): SpoolStats {
    let pending = 0;
    let bytesOnDisk = 0;
    for (const s of this.#segments) {
      pending += unackedIn(s, this.#ackedSeq);
      bytesOnDisk += s.durableSize;
    }
    return {
      appended: this.#appended,
      flushed: this.#flushed,
      acked: this.#ackedCount,
      pending,
      dropped: this.#dropped,
      rejected: this.#rejected,
      bytesOnDisk,
      bufferedBytes: this.#fill.used + this.#inFlightBytes,
      segments: this.#segments.filter((s) => s.durableSize > 0).length,
      batches: this.#batches,
      fsyncs: this.#fsyncs,
      nextSeq: BigInt(this.#nextSeq),
      durableSeq: BigInt(this.#durableSeq),
      ackedSeq: BigInt(this.#ackedSeq),
    };
  }

  /** Flushes and fsyncs everything, persists the acked offset, releases the directory. */
  close(): Promise<void> {
    this.#closePromise ??= this.#doClose();
    return this.#closePromise;
  }

  async #doClose(): Promise<void> {
    this.#closing = true;
    if (this.#ackTimer) clearTimeout(this.#ackTimer);
    this.#ackTimer = null;
    let error: unknown = null;
    if (!this.#failed) {
      try {
        await this.#waitDurable(this.#nextSeq - 1);
      } catch (err) {
        error = err;
      }
    }
    await this.#driving;
    if (this.#flushTimer) clearTimeout(this.#flushTimer);
    this.#flushTimer = null;
    if (!this.#failed) {
      try {
        await this.persistAcks();
      } catch (err) {
        error ??= err;
      }
    }
    this.#readsClosed = true;
    await Promise.allSettled(this.#reads);
    await Promise.allSettled(this.#background);
    this.#closed = true;
    this.#wakeTails();
    for (const s of this.#segments) {
      await s.fh?.close().catch(() => {});
      s.fh = null;
    }
    await this.#dirHandle.close().catch(() => {});
    await this.#lock.release();
    if (error) throw error;
  }

  // --- group commit -------------------------------------------------------------------------

  readonly #onFlushTimer = (): void => {
    this.#flushTimer = null;
    this.#requestFlush();
  };

  #requestFlush(): void {
    this.#flushWanted = true;
    if (this.#flushRunning || this.#kickScheduled) return;
    this.#kickScheduled = true;
    // setImmediate rather than flushing inline: callers that append a burst in one turn of the
    // event loop share the batch.
    setImmediate(() => {
      this.#kickScheduled = false;
      if (this.#flushRunning) return;
      this.#driving = this.#drive().finally(() => {
        this.#driving = null;
      });
    });
  }

  async #drive(): Promise<void> {
    this.#flushRunning = true;
    try {
      while (this.#flushWanted && !this.#failed) {
        this.#flushWanted = false;
        if (this.#fill.records === 0) break;
        await this.#writeBatch();
        const head = this.#waiters[this.#waitersHead];
        if ((head && head.seq > this.#durableSeq) || this.#fill.used >= this.#opts.flushBytes || this.#closing) {
          this.#flushWanted = true;
        }
      }
    } catch (err) {
      this.#fail(err instanceof Error ? err : new Error(String(err)));
    } finally {
      this.#flushRunning = false;
    }
  }

  async #writeBatch(): Promise<void> {
    if (this.#flushTimer) clearTimeout(this.#flushTimer);
    this.#flushTimer = null;
    const batch = this.#fill;
    this.#fill = this.#spare ?? newBatch(Math.min(this.#opts.flushBytes, 256 * 1024));
    this.#spare = null;
    this.#inFlightBytes = batch.used;
    let createdFile = false;
    for (const chunk of batch.chunks) {
      const seg = chunk.seg;
      if (chunk.end === chunk.start) continue;
      if (seg.fh === null) seg.fh = await open(seg.path, chunk.createsFile ? 'wx+' : 'r+');
      const fh = seg.fh;
      seg.busy++;
      try {
        await writeFully(fh, batch.buf, chunk.start, chunk.end - chunk.start, chunk.filePos);
        // A new file needs its size and inode on disk, not just its data.
        if (chunk.createsFile) await fh.sync();
        else await fh.datasync();
        this.#fsyncs++;
      } finally {
        this.#release(seg);
      }
      if (chunk.createsFile) createdFile = true;
      seg.durableSize = chunk.filePos + (chunk.end - chunk.start);
      seg.durableLastSeq = chunk.lastSeq;
    }
    if (createdFile) {
      await this.#dirHandle.sync();
      this.#fsyncs++;
    }
    this.#durableSeq = Math.max(this.#durableSeq, batch.lastSeq);
    this.#flushed += batch.records;
    this.#batches++;
    this.#inFlightBytes = 0;
    batch.used = 0;
    batch.records = 0;
    batch.chunks = [];
    // Don't keep a buffer that a burst grew far beyond the usual batch.
    if (batch.buf.length <= 4 * this.#opts.flushBytes) this.#spare = batch;
    this.#resolveWaiters();
    this.#wakeTails();
  }

  #waitDurable(seq: number): Promise<void> {
    if (this.#failed) return Promise.reject(this.#failed);
    if (seq <= this.#durableSeq) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      // Waiters arrive in seq order (seqs are handed out in call order), so a FIFO suffices.
      this.#waiters.push({ seq, resolve, reject });
      this.#requestFlush();
    });
  }

  #resolveWaiters(): void {
    const w = this.#waiters;
    while (this.#waitersHead < w.length) {
      const head = w[this.#waitersHead];
      if (!head || head.seq > this.#durableSeq) break;
      this.#waitersHead++;
      head.resolve();
    }
    if (this.#waitersHead > 1024 && this.#waitersHead * 2 > w.length) {
      this.#waiters = w.slice(this.#waitersHead);
      this.#waitersHead = 0;
    }
  }

  #fail(err: Error): void {
    if (this.#failed) return;
    this.#failed = err;
    if (this.#flushTimer) clearTimeout(this.#flushTimer);
    this.#flushTimer = null;
    const waiters = this.#waiters.slice(this.#waitersHead);
    this.#waiters = [];
    this.#waitersHead = 0;
    for (const w of waiters) w.reject(err);
    this.#wakeTails();
    // After a failed fsync the page cache no longer says what is on disk; only a reopen (which
    // rescans and verifies) does. Without a listener the error surfaces on the next call instead.
    if (this.listenerCount('error') > 0) this.emit('error', err);
  }

  // --- segments -----------------------------------------------------------------------------

  /** Creates the in-memory segment and queues its header; the file appears with the first flush. */
  #startSegment(): Segment {
    const seg = newSegment(this.dir, this.#nextSeq, 0);
    const batch = this.#fill;
    ensureRoom(batch, SEGMENT_HEADER_BYTES);
    encodeSegmentHeader(seg.baseSeq).copy(batch.buf, batch.used);
    batch.chunks.push({
      seg,
      start: batch.used,
      end: batch.used + SEGMENT_HEADER_BYTES,
      filePos: 0,
      lastSeq: seg.lastSeq,
      createsFile: true,
    });
    batch.used += SEGMENT_HEADER_BYTES;
    seg.size = SEGMENT_HEADER_BYTES;
    this.#totalBytes += SEGMENT_HEADER_BYTES;
    this.#segments.push(seg);
    this.#active = seg;
    return seg;
  }

  #makeRoom(need: number): void {
    const policy = this.#opts.fullPolicy;
    while (this.#totalBytes + need > this.#opts.maxBytes) {
      const oldest = this.#segments[0];
      // The segment being written, and segments with bytes still on their way, cannot go.
      if (!oldest || oldest === this.#active || oldest.durableSize !== oldest.size) break;
      const unacked = unackedIn(oldest, this.#ackedSeq);
      if (unacked > 0 && policy === 'reject-new') break;
      void this.#removeOldestSegment();
      if (unacked > 0) {
        this.#dropped += unacked;
        this.emit('warning', {
          kind: 'dropped-oldest',
          segment: oldest.name,
          records: unacked,
          firstSeq: BigInt(Math.max(oldest.firstSeq, this.#ackedSeq + 1)),
          lastSeq: BigInt(oldest.lastSeq),
        });
      }
    }
    if (this.#totalBytes + need <= this.#opts.maxBytes) {
      this.#overBudgetWarned = false;
      return;
    }
    if (policy === 'reject-new') {
      this.#rejected++;
      throw new SpoolFullError('max-bytes', `spool ${this.dir} is full (${this.#totalBytes} of ${this.#opts.maxBytes} bytes)`);
    }
    if (!this.#overBudgetWarned) {
      this.#overBudgetWarned = true;
      this.emit('warning', { kind: 'over-budget', bytes: this.#totalBytes + need, maxBytes: this.#opts.maxBytes });
    }
  }

  /** Deletes sealed segments the persisted acked seq fully covers; returns the unlink jobs. */
  #deleteAckedSegments(): Promise<void>[] {
    const jobs: Promise<void>[] = [];
    for (;;) {
      const oldest = this.#segments[0];
      if (!oldest || oldest === this.#active || oldest.durableSize !== oldest.size) return jobs;
      if (oldest.lastSeq > this.#persistedAckedSeq) return jobs;
      jobs.push(this.#removeOldestSegment());
    }
  }

  /** Forgets the oldest segment now and unlinks its file in the background. */
  #removeOldestSegment(): Promise<void> {
    const seg = this.#segments.shift();
    if (!seg) return Promise.resolve();
    this.#totalBytes -= seg.size;
    seg.deleted = true;
    const job = (async () => {
      try {
        await rm(seg.path, { force: true });
      } catch (error) {
        this.emit('warning', { kind: 'unlink-failed', segment: seg.name, error });
      }
      if (seg.busy === 0) await closeSegmentFile(seg);
    })();
    this.#background.add(job);
    void job.finally(() => this.#background.delete(job));
    return job;
  }

  #release(seg: Segment): void {
    seg.busy--;
    if (seg.busy === 0 && seg.deleted) void closeSegmentFile(seg);
  }

  async #persistStateOnce(): Promise<void> {
    const ackedSeq = this.#ackedSeq;
    const highWaterSeq = Math.max(this.#durableSeq, this.#persistedHighWater, ackedSeq);
    if (ackedSeq !== this.#persistedAckedSeq || highWaterSeq !== this.#persistedHighWater) {
      await writeSpoolState(this.dir, this.#dirHandle, { ackedSeq, highWaterSeq });
      this.#persistedAckedSeq = ackedSeq;
      this.#persistedHighWater = highWaterSeq;
    }
    await Promise.all(this.#deleteAckedSegments());
  }

  // --- reading ------------------------------------------------------------------------------

  #read(afterSeq: bigint, maxRecords: number): Promise<{ records: SpoolRecord[]; limit: number }> {
    if (this.#readsClosed) return Promise.reject(new SpoolClosedError('spool is closed'));
    const job = this.#readSegments(afterSeq, maxRecords);
    this.#reads.add(job);
    void job.finally(() => this.#reads.delete(job)).catch(() => {});
    return job;
  }

  async #readSegments(afterSeq: bigint, maxRecords: number): Promise<{ records: SpoolRecord[]; limit: number }> {
    const limit = this.#durableSeq;
    const records: SpoolRecord[] = [];
    if (afterSeq >= BigInt(limit) || maxRecords <= 0) return { records, limit };
    let from = afterSeq < 0n ? 1 : Number(afterSeq) + 1;
    for (const seg of this.#segments.slice()) {
      if (records.length >= maxRecords || from > limit) break;
      if (seg.deleted || seg.count === 0 || seg.durableLastSeq < from || seg.fh === null) continue;
      from = await this.#readSegment(seg, from, limit, maxRecords, records);
    }
    return { records, limit };
  }

  /** Appends records with from ≤ seq ≤ limit from one segment to `out`; returns the next `from`. */
  async #readSegment(seg: Segment, from: number, limit: number, maxRecords: number, out: SpoolRecord[]): Promise<number> {
    const fh = seg.fh;
    if (!fh) return from;
    seg.busy++;
    try {
      const view = newRecordView();
      const end = seg.durableSize;
      let off = indexLookup(seg, from);
      let buf = Buffer.allocUnsafe(READ_CHUNK_BYTES);
      outer: while (off < end && out.length < maxRecords && from <= limit) {
        const want = Math.min(end - off, buf.length);
        const { bytesRead } = await fh.read(buf, 0, want, off);
        if (bytesRead === 0) break;
        let p = 0;
        while (out.length < maxRecords && from <= limit) {
          const status = readRecordAt(buf, p, bytesRead, view);
          if (status === 'ok') {
            if (view.seq > limit) return limit + 1;
            if (view.seq >= from) {
              out.push({
                seq: BigInt(view.seq),
                receivedAtUs: readReceivedAtUs(buf, p),
                // Copied so the read buffer is neither retained nor shared with the caller.
                payload: Buffer.from(buf.subarray(view.payloadStart, view.payloadStart + view.payloadLength)),
              });
              from = view.seq + 1;
            }
            p = view.end;
            continue;
          }
          const partial = status === 'short-header' || status === 'short-payload';
          if (partial && off + bytesRead < end) {
            if (p === 0) {
              // One record larger than the buffer.
              const len = bytesRead >= 8 ? buf.readUInt32LE(4) : 0;
              buf = Buffer.allocUnsafe(Math.max(2 * buf.length, RECORD_HEADER_BYTES + len));
              continue outer;
            }
            break;
          }
          // Verified at open and written by us since, so this is damage after the fact: skip to
          // the next indexed record rather than wedge the uplink on it.
          this.emit('warning', { kind: 'corrupt-read', segment: seg.name, offset: off + p, reason: status });
          const next = nextIndexedOffset(seg, off + p);
          off = next < 0 ? end : next;
          continue outer;
        }
        off += p;
      }
      return from;
    } finally {
      this.#release(seg);
    }
  }

  #waitForNewer(seq: number, signal: AbortSignal | undefined): Promise<void> {
    if (this.#durableSeq > seq || this.#closing || this.#failed || signal?.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = (): void => {
        this.#tailWaiters.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      this.#tailWaiters.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  #wakeTails(): void {
    for (const wake of [...this.#tailWaiters]) wake();
  }
}

// --- recovery ---------------------------------------------------------------------------------

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

// --- helpers ----------------------------------------------------------------------------------

function resolveOptions(options: SpoolOptions): ResolvedOptions {
  const o = withDefaults<ResolvedOptions>(DEFAULTS, options);
  const int = (name: keyof ResolvedOptions, min: number, max = Number.MAX_SAFE_INTEGER): void => {
    const v = o[name];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min || v > max) {
      throw new RangeError(`spool option ${name} must be an integer in [${min}, ${max}], got ${String(v)}`);
    }
  };
  int('segmentBytes', SEGMENT_HEADER_BYTES + RECORD_HEADER_BYTES, MAX_SEGMENT_BYTES);
  int('maxBytes', 2 * o.segmentBytes);
  int('flushIntervalMs', 0);
  int('flushBytes', 1);
  int('ackPersistIntervalMs', 0);
  int('maxPendingBytes', 1);
  int('indexStride', 1);
  if (o.fullPolicy !== 'drop-oldest' && o.fullPolicy !== 'reject-new') {
    throw new RangeError(`spool option fullPolicy must be 'drop-oldest' or 'reject-new', got ${String(o.fullPolicy)}`);
  }
  return o;
}

function newSegment(dir: string, baseSeq: number, size: number): Segment {
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
    idxSeq: new Uint32Array(16),
    idxOff: new Uint32Array(16),
    idxLen: 0,
  };
}

function newBatch(capacity: number): Batch {
  return { buf: Buffer.allocUnsafe(Math.max(capacity, 4096)), used: 0, records: 0, lastSeq: 0, chunks: [] };
}

function ensureRoom(batch: Batch, n: number): void {
  if (batch.used + n <= batch.buf.length) return;
  const grown = Buffer.allocUnsafe(Math.max(batch.buf.length * 2, batch.used + n));
  batch.buf.copy(grown, 0, 0, batch.used);
  batch.buf = grown;
}

async function writeFully(fh: FileHandle, buf: Buffer, start: number, length: number, position: number): Promise<void> {
  let done = 0;
  while (done < length) {
    const { bytesWritten } = await fh.write(buf, start + done, length - done, position + done);
    if (bytesWritten <= 0) throw new Error(`short write to spool segment at ${position + done}`);
    done += bytesWritten;
  }
}

async function closeSegmentFile(seg: Segment): Promise<void> {
  const fh = seg.fh;
  seg.fh = null;
  await fh?.close().catch(() => {});
}

/** Records in `seg` with seq > acked (exact unless a corruption gap sits inside the segment). */
function unackedIn(seg: Segment, acked: number): number {
  if (seg.count === 0 || seg.lastSeq <= acked) return 0;
  if (seg.firstSeq > acked) return seg.count;
  return Math.min(seg.count, seg.lastSeq - acked);
}

function addIndexEntry(seg: Segment, seq: number, offset: number): void {
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
function indexLookup(seg: Segment, seq: number): number {
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

function nextIndexedOffset(seg: Segment, offset: number): number {
  for (let i = 0; i < seg.idxLen; i++) {
    const o = seg.idxOff[i] ?? 0;
    if (o > offset) return o;
  }
  return -1;
}
