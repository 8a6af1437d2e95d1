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
 *
 * The parts, one job each: writer.ts (seqs, segments, group commit), readers.ts (pages and tail
 * readers), ack-store.ts (acknowledgements and state.json), eviction.ts (which segments leave, and
 * the full policy), recovery.ts (what open() makes of a crash), sparse-index.ts (seq → offset within
 * a segment), segment.ts (a segment in memory), options.ts and errors.ts. This file is the Spool
 * they make up: its public API, its lifecycle (open, close) and the wiring between the parts.
 */
import { EventEmitter } from 'node:events';
import { mkdir, open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { AckStore } from './ack-store.ts';
import { acquireDirLock } from './dir-lock.ts';
import type { DirLock } from './dir-lock.ts';
import { SpoolClosedError } from './errors.ts';
import type { SpoolWarning } from './errors.ts';
import { Eviction } from './eviction.ts';
import { resolveOptions } from './options.ts';
import type { ResolvedOptions, SpoolOptions } from './options.ts';
import { SpoolReaders } from './readers.ts';
import type { SpoolRecord } from './readers.ts';
import { recoverSpool } from './recovery.ts';
import type { RecoveredSpool, SpoolRecovery } from './recovery.ts';
import { unackedIn } from './segment.ts';
import type { Segment } from './segment.ts';
import { SegmentWriter } from './writer.ts';

export { SpoolClosedError, SpoolFormatError, SpoolFullError } from './errors.ts';
export type { SpoolWarning } from './errors.ts';
export type { FullPolicy, SpoolOptions } from './options.ts';
export type { SpoolRecord } from './readers.ts';
export type { RecoveredCorruption, SpoolRecovery } from './recovery.ts';

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

type SpoolEvents = {
  warning: [SpoolWarning];
  /** A write or fsync failed: the spool is unusable and must be closed and reopened (which recovers). */
  error: [Error];
};

export class Spool extends EventEmitter<SpoolEvents> {
  readonly dir: string;
  readonly recovery: SpoolRecovery;

  readonly #lock: DirLock;
  readonly #dirHandle: FileHandle;
  readonly #writer: SegmentWriter;
  readonly #acks: AckStore;
  readonly #eviction: Eviction;
  readonly #readers: SpoolReaders;
  #closed = false;
  #closePromise: Promise<void> | null = null;

  private constructor(init: { dir: string; opts: ResolvedOptions; lock: DirLock; dirHandle: FileHandle; recovered: RecoveredSpool }) {
    super();
    const { dir, opts, dirHandle, recovered } = init;
    this.dir = dir;
    this.recovery = recovered.recovery;
    this.#lock = init.lock;
    this.#dirHandle = dirHandle;
    const warn = (w: SpoolWarning): void => {
      this.emit('warning', w);
    };
    const writer = new SegmentWriter({
      dir,
      opts,
      dirHandle,
      segments: recovered.segments,
      nextSeq: recovered.nextSeq,
      reuseLast: recovered.reuseLast,
      makeRoom: (need) => this.#eviction.makeRoom(need),
      onDurable: () => this.#readers.wakeTails(),
      onFail: (err) => {
        this.#readers.wakeTails();
        // After a failed fsync the page cache no longer says what is on disk; only a reopen (which
        // rescans and verifies) does. Without a listener the error surfaces on the next call instead.
        if (this.listenerCount('error') > 0) this.emit('error', err);
      },
    });
    const acks = new AckStore({
      dir,
      dirHandle,
      writer,
      persistIntervalMs: opts.ackPersistIntervalMs,
      ackedSeq: recovered.ackedSeq,
      highWaterSeq: recovered.highWaterSeq,
      onPersisted: () => Promise.all(this.#eviction.deleteAckedSegments()),
      warn,
    });
    this.#writer = writer;
    this.#acks = acks;
    this.#eviction = new Eviction({ opts, writer, acks, warn });
    this.#readers = new SpoolReaders({ writer, acks, warn });
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
    let segments: Segment[] = [];
    try {
      dirHandle = await open(dir, 'r');
      const recovered = await recoverSpool(dir, opts);
      segments = recovered.segments;
      for (const s of segments) s.fh = await open(s.path, 'r+');
      const spool: Spool = new Spool({ dir, opts, lock, dirHandle, recovered });
      await Promise.all(spool.#eviction.deleteAckedSegments());
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
    return BigInt(this.#writer.nextSeq);
  }

  /** Every record with seq ≤ durableSeq is on disk (or was dropped by policy). */
  get durableSeq(): bigint {
    return BigInt(this.#writer.durableSeq);
  }

  get ackedSeq(): bigint {
    return BigInt(this.#acks.ackedSeq);
  }

  /**
   * Buffers one frame and returns its seq. Not durable until a flush: use appendDurable() or
   * flush() to know. Throws SpoolFullError under 'reject-new' when full, or when the disk has
   * fallen maxPendingBytes behind.
   */
  append(payload: Uint8Array, receivedAtUs: bigint | number): bigint {
    return BigInt(this.#writer.append(payload, receivedAtUs));
  }

  /** append() and wait until the record is on disk. Concurrent callers share one fsync. */
  async appendDurable(payload: Uint8Array, receivedAtUs: bigint | number): Promise<bigint> {
    const seq = this.#writer.append(payload, receivedAtUs);
    await this.#writer.waitDurable(seq);
    return BigInt(seq);
  }

  /** Resolves once every record appended before the call is on disk. */
  async flush(): Promise<void> {
    const writer = this.#writer;
    if (writer.failed) throw writer.failed;
    if (this.#closed) throw new SpoolClosedError('spool is closed');
    await writer.waitDurable(writer.nextSeq - 1);
  }

  /**
   * Marks every record with seq ≤ `seq` acknowledged by the cloud. Persisted in the background
   * (batched, ackPersistIntervalMs); persistAcks() forces it. Lower values than the current acked
   * seq are ignored; acknowledging a seq that was never made durable is a caller bug and throws.
   */
  ack(seq: bigint): void {
    if (this.#closed) throw new SpoolClosedError('spool is closed');
    this.#acks.ack(seq);
  }

  /** Writes the acked offset and high-water seq now, then deletes fully acknowledged segments. */
  async persistAcks(): Promise<void> {
    if (this.#closed) throw new SpoolClosedError('spool is closed');
    await this.#acks.persist();
  }

  /**
   * Up to `maxRecords` durable records with seq > afterSeq, in seq order. Records already acked
   * but not yet deleted are returned too; records dropped by policy are skipped (the seq gap shows).
   */
  readFrom(afterSeq: bigint, maxRecords = 1000): Promise<SpoolRecord[]> {
    return this.#readers.readFrom(afterSeq, maxRecords);
  }

  /**
   * Async iterator over durable records after `afterSeq` (default: the acked seq when iteration
   * starts) that keeps following the tail as new batches become durable. Ends when the spool is
   * closed or `signal` aborts.
   */
  records(options: { afterSeq?: bigint; batchSize?: number; signal?: AbortSignal } = {}): AsyncGenerator<SpoolRecord, void, undefined> {
    // The readers' own generator, not a wrapper around it: nothing is added per record.
    return this.#readers.records(options);
  }

  stats(): SpoolStats {
    const writer = this.#writer;
    const ackedSeq = this.#acks.ackedSeq;
    let pending = 0;
    let bytesOnDisk = 0;
    for (const s of writer.segments) {
      pending += unackedIn(s, ackedSeq);
      bytesOnDisk += s.durableSize;
    }
    const counts = writer.counts();
    return {
      appended: counts.appended,
      flushed: counts.flushed,
      acked: this.#acks.ackedCount,
      pending,
      dropped: this.#eviction.dropped,
      rejected: counts.rejected,
      bytesOnDisk,
      bufferedBytes: counts.bufferedBytes,
      segments: writer.segments.filter((s) => s.durableSize > 0).length,
      batches: counts.batches,
      fsyncs: counts.fsyncs,
      nextSeq: BigInt(writer.nextSeq),
      durableSeq: BigInt(writer.durableSeq),
      ackedSeq: BigInt(ackedSeq),
    };
  }

  /** Flushes and fsyncs everything, persists the acked offset, releases the directory. */
  close(): Promise<void> {
    this.#closePromise ??= this.#doClose();
    return this.#closePromise;
  }

  async #doClose(): Promise<void> {
    this.#acks.cancelTimer();
    let error: unknown = null;
    try {
      await this.#writer.finish();
    } catch (err) {
      error = err;
    }
    if (!this.#writer.failed) {
      try {
        await this.persistAcks();
      } catch (err) {
        error ??= err;
      }
    }
    await this.#readers.close();
    await this.#eviction.settle();
    this.#closed = true;
    this.#readers.wakeTails();
    await this.#writer.closeFiles();
    await this.#dirHandle.close().catch(() => {});
    await this.#lock.release();
    if (error) throw error;
  }
}
