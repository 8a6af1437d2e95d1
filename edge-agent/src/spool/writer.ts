// The writing side of the spool: hands out seqs, lays records out in segments (rolling to a new one
// at segmentBytes), and group-commits them: appends are buffered and written by one write and one
// fdatasync per segment per batch. A batch that crosses a roll fsyncs the old segment before the new
// file is even created, and fsyncs the directory after creating it, so a crash can only tear the tail
// of the newest segment. It owns the list of segments and the seqs appended and made durable; the
// other parts of the spool read them from here. append() is the hot path: everything it touches is a
// field of this class or of the segment being written.
import { open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { SpoolClosedError, SpoolFullError } from './errors.ts';
import type { ResolvedOptions } from './options.ts';
import { MAX_PAYLOAD_BYTES, RECORD_HEADER_BYTES, SEGMENT_HEADER_BYTES, encodeRecord, encodeSegmentHeader } from './record-format.ts';
import { newSegment, releaseSegment } from './segment.ts';
import type { Segment } from './segment.ts';
import { addIndexEntry } from './sparse-index.ts';

const MAX_U64 = 0xffff_ffff_ffff_ffffn;

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

export interface SegmentWriterInit {
  readonly dir: string;
  readonly opts: ResolvedOptions;
  /** The spool directory, fsynced after a segment file is created. */
  readonly dirHandle: FileHandle;
  /** What recovery found, oldest first; the writer keeps this array as its list. */
  readonly segments: Segment[];
  readonly nextSeq: number;
  /** Keep appending to the newest segment (else a new one is started). */
  readonly reuseLast: boolean;
  /**
   * Called when an append would take the spool past maxBytes; frees what the full policy allows.
   * false: the policy refuses the append (reject-new).
   */
  readonly makeRoom: (need: number) => boolean;
  /** Called after each batch is on disk (durableSeq moved). */
  readonly onDurable: () => void;
  /** Called once when a write or fsync failed; the spool is unusable from then on. */
  readonly onFail: (err: Error) => void;
}

/** Counted since open (see SpoolStats). */
export interface WriterCounts {
  readonly appended: number;
  readonly flushed: number;
  readonly rejected: number;
  readonly bufferedBytes: number;
  readonly batches: number;
  readonly fsyncs: number;
}

export class SegmentWriter {
  /** Oldest first; the last one is `active`. Segments leave only through forgetOldestSegment(). */
  readonly segments: Segment[];

  readonly #init: SegmentWriterInit;
  readonly #opts: ResolvedOptions;
  #active: Segment;
  #totalBytes: number;
  #nextSeq: number;
  #durableSeq: number;

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

  #failed: Error | null = null;
  #closing = false;

  #appended = 0;
  #flushed = 0;
  #rejected = 0;
  #batches = 0;
  #fsyncs = 0;

  constructor(init: SegmentWriterInit) {
    this.#init = init;
    this.#opts = init.opts;
    this.segments = init.segments;
    this.#totalBytes = init.segments.reduce((n, s) => n + s.size, 0);
    this.#nextSeq = init.nextSeq;
    this.#durableSeq = init.nextSeq - 1;
    this.#fill = newBatch(Math.min(this.#opts.flushBytes, 256 * 1024));
    const last = init.segments.at(-1);
    if (last && init.reuseLast) {
      this.#active = last;
    } else {
      this.#active = this.#startSegment();
    }
  }

  /** The segment being appended to. */
  get active(): Segment {
    return this.#active;
  }

  /** Bytes of all segments, buffered ones included (what maxBytes bounds). */
  get totalBytes(): number {
    return this.#totalBytes;
  }

  get nextSeq(): number {
    return this.#nextSeq;
  }

  /** Every record with seq ≤ durableSeq is on disk (or was dropped by policy). */
  get durableSeq(): number {
    return this.#durableSeq;
  }

  /** The write or fsync failure that made the spool unusable, if one did. */
  get failed(): Error | null {
    return this.#failed;
  }

  /** finish() was called: appends are refused. */
  get closing(): boolean {
    return this.#closing;
  }

  /** The writer's part of Spool.stats(). */
  counts(): WriterCounts {
    return {
      appended: this.#appended,
      flushed: this.#flushed,
      rejected: this.#rejected,
      bufferedBytes: this.#fill.used + this.#inFlightBytes,
      batches: this.#batches,
      fsyncs: this.#fsyncs,
    };
  }

  /** Buffers one record and returns its seq (see Spool.append). */
  append(payload: Uint8Array, receivedAtUs: bigint | number): number {
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
    if (this.#totalBytes + need > this.#opts.maxBytes && !this.#init.makeRoom(need)) {
      this.#rejected++;
      throw new SpoolFullError('max-bytes', `spool ${this.#init.dir} is full (${this.#totalBytes} of ${this.#opts.maxBytes} bytes)`);
    }
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
    return seq;
  }

  /** Resolves once the record with this seq (and every one before it) is on disk. */
  waitDurable(seq: number): Promise<void> {
    if (this.#failed) return Promise.reject(this.#failed);
    if (seq <= this.#durableSeq) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      // Waiters arrive in seq order (seqs are handed out in call order), so a FIFO suffices.
      this.#waiters.push({ seq, resolve, reject });
      this.#requestFlush();
    });
  }

  /**
   * Refuses further appends, makes everything appended durable and waits for the last batch. Throws
   * what made that fail (the writer is then settled all the same).
   */
  async finish(): Promise<void> {
    this.#closing = true;
    let error: unknown = null;
    if (!this.#failed) {
      try {
        await this.waitDurable(this.#nextSeq - 1);
      } catch (err) {
        error = err;
      }
    }
    await this.#driving;
    if (this.#flushTimer) clearTimeout(this.#flushTimer);
    this.#flushTimer = null;
    if (error) throw error;
  }

  /** Closes every segment file (the last step of closing the spool). */
  async closeFiles(): Promise<void> {
    for (const s of this.segments) {
      await s.fh?.close().catch(() => {});
      s.fh = null;
    }
  }

  /**
   * Takes the oldest segment out of the spool's list and byte count and marks it deleted; its file is
   * the caller's to unlink (eviction.ts).
   */
  forgetOldestSegment(): Segment | undefined {
    const seg = this.segments.shift();
    if (!seg) return undefined;
    this.#totalBytes -= seg.size;
    seg.deleted = true;
    return seg;
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
        releaseSegment(seg);
      }
      if (chunk.createsFile) createdFile = true;
      seg.durableSize = chunk.filePos + (chunk.end - chunk.start);
      seg.durableLastSeq = chunk.lastSeq;
    }
    if (createdFile) {
      await this.#init.dirHandle.sync();
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
    this.#init.onDurable();
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
    this.#init.onFail(err);
  }

  // --- segments -----------------------------------------------------------------------------

  /** Creates the in-memory segment and queues its header; the file appears with the first flush. */
  #startSegment(): Segment {
    const seg = newSegment(this.#init.dir, this.#nextSeq, 0);
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
    this.segments.push(seg);
    this.#active = seg;
    return seg;
  }
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
