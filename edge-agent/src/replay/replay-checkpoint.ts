// Resuming a file replay exactly where the spool left off, so that a replay killed at any moment
// (SIGKILL included) and started again spools every frame of the file once: none lost, none twice.
//
// Two sources of truth, the newer wins:
//   1. replay-checkpoints.json in the spool directory: per file fingerprint, the file offset up to
//      which every frame is durable in the spool, the spool seq at that point, and whether the replay
//      finished. Written (temp file, fsync, rename) at the start, every couple of seconds after a
//      spool flush, and at the end; never ahead of what the spool holds.
//   2. The spool itself: every replayed frame's record carries the offset just after it and the
//      file's tag (agent-record.ts), so the records written after the last checkpoint, including
//      those of a group commit that made it to disk just before the crash, say exactly how far
//      the replay really got.
// Only records after the checkpoint's seq are read, so a resume costs a couple of seconds of frames.
import { createHash } from 'node:crypto';
import { open, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomically } from '../fs/write-file-atomically.ts';
import { decodeAgentRecord } from '../record/agent-record.ts';
import type { Spool } from '../spool/spool.ts';

export const REPLAY_CHECKPOINTS_FILE = 'replay-checkpoints.json';
const FORMAT = 'sortie-replay-checkpoints';
const VERSION = 1;
/** Bytes hashed from each end of the file. */
const FINGERPRINT_SPAN = 1024 * 1024;

export interface FileFingerprint {
  /** sha256 hex of the size and the first and last MiB: cheap for a multi-GB log, and a recording
   *  that grew or was edited gets a new fingerprint (and is replayed from the start). */
  readonly fingerprint: string;
  /** First 4 bytes of the fingerprint, written with every replayed frame. */
  readonly fileTag: number;
  readonly size: number;
}

export async function fingerprintFile(path: string): Promise<FileFingerprint> {
  const fh = await open(path, 'r');
  try {
    const size = (await fh.stat()).size;
    const hash = createHash('sha256').update(`sortie-replay-v1 ${size}\n`);
    const head = Buffer.alloc(Math.min(size, FINGERPRINT_SPAN));
    await fh.read(head, 0, head.length, 0);
    hash.update(head);
    if (size > FINGERPRINT_SPAN) {
      const tail = Buffer.alloc(Math.min(size - FINGERPRINT_SPAN, FINGERPRINT_SPAN));
      await fh.read(tail, 0, tail.length, size - tail.length);
      hash.update(tail);
    }
    const digest = hash.digest();
    return { fingerprint: digest.toString('hex'), fileTag: digest.readUInt32LE(0), size };
  } finally {
    await fh.close();
  }
}

export interface ReplayCheckpoint {
  /** For the operator reading the file; the fingerprint is the key. */
  readonly path: string;
  readonly size: number;
  /** Every frame that ends at or before this offset is durable in the spool. */
  readonly position: number;
  /** Spool seq when it was written: records after it may carry a newer position. */
  readonly seq: string;
  readonly done: boolean;
  readonly updatedAt: string;
  /** A raw capture paced by boot time: where its clock started (file-replay.ts), so a resumed run keeps its times. */
  readonly originUs?: number;
}

export class ReplayCheckpointStore {
  readonly #dir: string;
  readonly #entries: Record<string, ReplayCheckpoint>;
  #writing: Promise<void> = Promise.resolve();

  private constructor(dir: string, entries: Record<string, ReplayCheckpoint>) {
    this.#dir = dir;
    this.#entries = entries;
  }

  /** `dir` is the spool directory (its LOCK keeps a second agent out of this file too). */
  static async open(dir: string): Promise<ReplayCheckpointStore> {
    let text: string | null = null;
    try {
      text = await readFile(join(dir, REPLAY_CHECKPOINTS_FILE), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    if (text === null) return new ReplayCheckpointStore(dir, {});
    const parsed = JSON.parse(text) as { format?: unknown; version?: unknown; files?: unknown };
    if (parsed.format !== FORMAT || parsed.version !== VERSION || typeof parsed.files !== 'object' || !parsed.files) {
      throw new Error(`${join(dir, REPLAY_CHECKPOINTS_FILE)} has an unknown format or version`);
    }
    return new ReplayCheckpointStore(dir, { ...(parsed.files as Record<string, ReplayCheckpoint>) });
  }

  get(fingerprint: string): ReplayCheckpoint | undefined {
    return this.#entries[fingerprint];
  }

  /** Durable when the promise resolves; writes are serialised. */
  set(fingerprint: string, checkpoint: Omit<ReplayCheckpoint, 'updatedAt'>): Promise<void> {
    this.#entries[fingerprint] = { ...checkpoint, updatedAt: new Date().toISOString() };
    const body = JSON.stringify({ format: FORMAT, version: VERSION, files: this.#entries }, null, 1) + '\n';
    const write = this.#writing.then(() => writeFileAtomically(join(this.#dir, REPLAY_CHECKPOINTS_FILE), body));
    this.#writing = write.catch(() => {});
    return write;
  }
}

export interface ResumePoint {
  /** Byte offset to start reading at. */
  readonly position: number;
  /** A previous run replayed the whole file into this spool. */
  readonly done: boolean;
  /** Where the position came from. */
  readonly from: 'start' | 'checkpoint' | 'spool';
}

/**
 * Where a replay of the file with `fileTag` should start, given its checkpoint (if any) and the
 * records the spool holds after it.
 */
export async function findResumePoint(spool: Spool, checkpoint: ReplayCheckpoint | undefined, fileTag: number): Promise<ResumePoint> {
  if (!checkpoint) return { position: 0, done: false, from: 'start' };
  let position = checkpoint.position;
  let from: ResumePoint['from'] = 'checkpoint';
  let after = BigInt(checkpoint.seq);
  for (;;) {
    const page = await spool.readFrom(after, 4096);
    const last = page.at(-1);
    if (!last) break;
    for (const r of page) {
      let source;
      try {
        source = decodeAgentRecord(r.payload).source;
      } catch {
        continue;
      }
      if (source && source.fileTag === fileTag && source.position > position) {
        position = source.position;
        from = 'spool';
      }
    }
    after = last.seq;
  }
  return { position, done: checkpoint.done, from };
}

export interface SpooledPositionSnapshot {
  readonly seq: bigint;
  readonly position: number;
}

/**
 * Keeps one file's checkpoint current during a replay: every `intervalMs`, makes what the pipeline
 * appended durable and records how far that is. Never records a position the spool does not hold.
 */
export class ReplayCheckpointer {
  readonly #store: ReplayCheckpointStore;
  readonly #file: FileFingerprint & { path: string };
  readonly #spool: Spool;
  readonly #lastSpooled: () => SpooledPositionSnapshot | null;
  readonly #intervalMs: number;
  readonly #originUs: number | undefined;
  #timer: NodeJS.Timeout | null = null;
  #saved = -1;
  #chain: Promise<void> = Promise.resolve();

  constructor(options: {
    store: ReplayCheckpointStore;
    file: FileFingerprint & { path: string };
    spool: Spool;
    lastSpooled: () => SpooledPositionSnapshot | null;
    intervalMs?: number;
    originUs?: number;
  }) {
    this.#store = options.store;
    this.#file = options.file;
    this.#spool = options.spool;
    this.#lastSpooled = options.lastSpooled;
    this.#intervalMs = options.intervalMs ?? 2000;
    this.#originUs = options.originUs;
  }

  /** Before the first frame is appended: the scan on resume starts from this seq. */
  async begin(position: number): Promise<void> {
    await this.#write(position, this.#spool.nextSeq - 1n, false);
    this.#timer = setInterval(() => void this.save().catch(() => {}), this.#intervalMs);
    this.#timer.unref();
  }

  /** Flushes the spool and records the position of the last frame appended. */
  save(): Promise<void> {
    const run = this.#chain.then(async () => {
      const snap = this.#lastSpooled();
      if (!snap || snap.position <= this.#saved) return;
      await this.#spool.flush();
      await this.#write(snap.position, snap.seq, false);
    });
    this.#chain = run.catch(() => {});
    return run;
  }

  /** At the end of the run: the whole file (`done`) or as far as it got (interrupted). */
  async finish(done: boolean): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    if (!done) return this.save();
    const run = this.#chain.then(async () => {
      await this.#spool.flush();
      await this.#write(this.#file.size, this.#spool.nextSeq - 1n, true);
    });
    this.#chain = run.catch(() => {});
    return run;
  }

  async #write(position: number, seq: bigint, done: boolean): Promise<void> {
    await this.#store.set(this.#file.fingerprint, { path: this.#file.path, size: this.#file.size, position, seq: String(seq), done, ...(this.#originUs !== undefined && { originUs: this.#originUs }) });
    this.#saved = position;
  }
}
