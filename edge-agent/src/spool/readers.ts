// The reading side of the spool: pages of durable records (readFrom) and tail readers (records())
// that follow the spool as new batches become durable, which is how the uplink drains it. Only
// records whose batch is on disk are ever handed out, so a frame that reached the cloud cannot be
// lost in a crash and have its seq handed to a different frame afterwards. A reader seeks with the
// segment's sparse index and reads in 64 KiB chunks; the per-record loop touches only the chunk, the
// segment and the output.
import type { AckStore } from './ack-store.ts';
import { SpoolClosedError } from './errors.ts';
import type { SpoolWarning } from './errors.ts';
import { RECORD_HEADER_BYTES, newRecordView, readReceivedAtUs, readRecordAt } from './record-format.ts';
import { releaseSegment } from './segment.ts';
import type { Segment } from './segment.ts';
import { indexLookup, nextIndexedOffset } from './sparse-index.ts';
import type { SegmentWriter } from './writer.ts';

const READ_CHUNK_BYTES = 64 * 1024;

export interface SpoolRecord {
  readonly seq: bigint;
  readonly receivedAtUs: bigint;
  readonly payload: Buffer;
}

interface ReadResult {
  readonly records: SpoolRecord[];
  /** The durable seq the read stopped at: nothing after it was looked at. */
  readonly limit: number;
}

export class SpoolReaders {
  readonly #writer: SegmentWriter;
  readonly #acks: AckStore;
  readonly #warn: (w: SpoolWarning) => void;
  readonly #reads = new Set<Promise<unknown>>();
  readonly #tailWaiters = new Set<() => void>();
  #closed = false;

  constructor(init: { writer: SegmentWriter; acks: AckStore; warn: (w: SpoolWarning) => void }) {
    this.#writer = init.writer;
    this.#acks = init.acks;
    this.#warn = init.warn;
  }

  /** Up to `maxRecords` durable records with seq > afterSeq, in seq order (see Spool.readFrom). */
  async readFrom(afterSeq: bigint, maxRecords: number): Promise<SpoolRecord[]> {
    return (await this.#read(afterSeq, maxRecords)).records;
  }

  /** Durable records after `afterSeq`, following the tail (see Spool.records). */
  async *records(options: { afterSeq?: bigint; batchSize?: number; signal?: AbortSignal }): AsyncGenerator<SpoolRecord, void, undefined> {
    const writer = this.#writer;
    const { signal } = options;
    const batchSize = options.batchSize ?? 512;
    let after = options.afterSeq ?? BigInt(this.#acks.ackedSeq);
    while (!writer.closing && !signal?.aborted) {
      if (writer.failed) throw writer.failed;
      let got: ReadResult;
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

  /** Wakes every tail reader waiting for newer records (a batch is durable, or the spool ends). */
  wakeTails(): void {
    for (const wake of [...this.#tailWaiters]) wake();
  }

  /** Refuses new reads and waits for those under way (their segment files are about to close). */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.allSettled(this.#reads);
  }

  #read(afterSeq: bigint, maxRecords: number): Promise<ReadResult> {
    if (this.#closed) return Promise.reject(new SpoolClosedError('spool is closed'));
    const job = this.#readSegments(afterSeq, maxRecords);
    this.#reads.add(job);
    void job.finally(() => this.#reads.delete(job)).catch(() => {});
    return job;
  }

  async #readSegments(afterSeq: bigint, maxRecords: number): Promise<ReadResult> {
    const limit = this.#writer.durableSeq;
    const records: SpoolRecord[] = [];
    if (afterSeq >= BigInt(limit) || maxRecords <= 0) return { records, limit };
    let from = afterSeq < 0n ? 1 : Number(afterSeq) + 1;
    for (const seg of this.#writer.segments.slice()) {
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
          this.#warn({ kind: 'corrupt-read', segment: seg.name, offset: off + p, reason: status });
          const next = nextIndexedOffset(seg, off + p);
          off = next < 0 ? end : next;
          continue outer;
        }
        off += p;
      }
      return from;
    } finally {
      releaseSegment(seg);
    }
  }

  #waitForNewer(seq: number, signal: AbortSignal | undefined): Promise<void> {
    const writer = this.#writer;
    if (writer.durableSeq > seq || writer.closing || writer.failed || signal?.aborted) return Promise.resolve();
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
}
