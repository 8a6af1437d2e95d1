// Replay of a recorded flight from a file, for tests and for uploading a recording.
//
//   tlog  (8-byte big-endian µs timestamp + frame, repeated): records are cut here with the same walk
//         as the live framer and handed out one per chunk, stamped with the recorded time, at
//         recorded speed × `speed` or as fast as possible ('max').
//   raw   (.bin/.raw/.mavlink: the bytes of a serial link, no timestamps): when its messages carry their
//         sender's boot time (found in the first MiB), frames are cut here and handed out one per chunk,
//         stamped and paced by that clock (capture-clock.ts) from when the replay began, like a tlog.
//         Otherwise, or with `byteRate`, handed out in chunks as fast as possible or at `byteRate`
//         (× `speed`) bytes/s, stamped with the agent clock. `timeBase` says which, for the log.
//
// Every chunk carries its byte range in the file, so a replay interrupted at any point (even by
// SIGKILL) resumes after the last frame the spool kept: `startAt` is that offset.
import { open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { frameBootTime, MavlinkFramer, type CrcExtraLookup } from '@sortie/contracts/mavlink';
import { agentClock, sleep } from '../core/clock.ts';
import type { Clock } from '../core/clock.ts';
import { PositionedFramer, PositionedTlogWalker } from '../framing/positioned-walkers.ts';
import { CaptureClock } from './capture-clock.ts';
import { ReplayPacer } from './replay-pacer.ts';
import type { ReplaySpeed } from './replay-pacer.ts';
import type { Source, SourceChunk, SourceKind, SourceProgress, SourceStats } from './source.ts';

export type ReplayFormat = 'tlog' | 'raw';

export interface FileReplayOptions {
  readonly path: string;
  readonly format: ReplayFormat;
  readonly speed?: ReplaySpeed;
  /** Raw captures: bytes per second at speed 1 (unset: as fast as possible). */
  readonly byteRate?: number;
  /** Byte offset to start reading at (a resumed replay). */
  readonly startAt?: number;
  readonly crcExtra?: CrcExtraLookup;
  readonly clock?: Clock;
  /** Bytes per file read. Default 64 KiB. */
  readonly readBytes?: number;
  readonly monoMs?: () => number;
  /**
   * Raw captures paced by boot time: when the capture's first frame is placed, µs since the epoch. A
   * resumed replay passes its first run's (replay-checkpoint.ts keeps it), so every frame keeps the time
   * one uninterrupted run gives it; by default the agent clock at open().
   */
  readonly originUs?: number;
}

/** What a replayed file's receive times are, said once at start (the agent logs it). */
export interface ReplayTimeBase {
  /** `recorded`: a tlog's timestamps; `boot`: a raw capture's messages' boot time; `agent`: the agent clock as read. */
  readonly kind: 'recorded' | 'boot' | 'agent';
  readonly description: string;
  /** `boot`: the capture's first frame's time, µs since the epoch. */
  readonly originUs?: number;
}

const DEFAULT_READ_BYTES = 64 * 1024;
/** How far into a raw capture to look for a message that carries a boot time before settling for the agent clock. */
const PROBE_BYTES = 1024 * 1024;

export class FileReplaySource implements Source {
  readonly kind: SourceKind;
  readonly description: string;
  readonly #opts: FileReplayOptions;
  readonly #clock: Clock;
  readonly #abort = new AbortController();
  readonly #pacer: ReplayPacer;
  #fh: FileHandle | null = null;
  #size = 0;
  /** Next byte to read. */
  #position: number;
  /** End of the last chunk handed out: what the progress bar shows (reads run up to 64 KiB ahead). */
  #handedOut: number;
  #bytesRead = 0;
  #chunks = 0;
  #discarded = 0;
  #lastAtUs: number;
  #state = 'not started';
  #iterating = false;
  #timeBase: ReplayTimeBase;

  constructor(options: FileReplayOptions) {
    this.#opts = options;
    this.kind = options.format;
    this.#timeBase =
      options.format === 'tlog'
        ? { kind: 'recorded', description: "the recorder's timestamps (tlog)" }
        : { kind: 'agent', description: 'the agent clock as the bytes are read' };
    this.#clock = options.clock ?? agentClock;
    this.#pacer = new ReplayPacer(options.speed ?? 'max', options.monoMs);
    this.#position = options.startAt ?? 0;
    this.#handedOut = this.#position;
    this.#lastAtUs = this.#clock.nowUs();
    const speed = options.speed === undefined || options.speed === 'max' ? 'max speed' : `${options.speed}×`;
    this.description = `${options.format} replay of ${options.path} at ${speed}`;
  }

  /** Opens the file (fails here, not mid-run, when it is missing or unreadable). */
  async open(): Promise<void> {
    this.#fh = await open(this.#opts.path, 'r');
    this.#size = (await this.#fh.stat()).size;
    if (this.#position > this.#size) this.#position = this.#size;
    this.#handedOut = this.#position;
    if (this.kind === 'raw') this.#timeBase = await this.#rawTimeBase();
    this.#state = 'replaying';
  }

  /** Receive times come from the file (a tlog's recorder, a raw capture's boot clock), not the agent clock. */
  get recordedTime(): boolean {
    return this.#timeBase.kind !== 'agent';
  }

  /** What this replay's receive times are; final once open() has resolved. */
  get timeBase(): ReplayTimeBase {
    return this.#timeBase;
  }

  /** A raw capture is paced by its messages' boot time when one of them in its first MiB carries one and no byte rate was asked for. */
  async #rawTimeBase(): Promise<ReplayTimeBase> {
    if (this.#opts.byteRate !== undefined) return { kind: 'agent', description: 'the agent clock as the bytes are read, paced by --byte-rate' };
    const framer = new MavlinkFramer({ crcExtra: this.#opts.crcExtra });
    const head = await this.#readAt(0, Math.min(PROBE_BYTES, this.#size));
    const paced = [...framer.push(head), ...framer.end()].map((f) => frameBootTime(f)).find((t) => t !== undefined);
    if (!paced) return { kind: 'agent', description: 'the agent clock as the bytes are read: no message in its first MiB carries a boot time' };
    const originUs = this.#opts.originUs ?? this.#clock.nowUs();
    return {
      kind: 'boot',
      originUs,
      description: `its messages' own boot time (${paced.field} first), from ${new Date(originUs / 1000).toISOString()}; a frame without one takes the time reached`,
    };
  }

  get size(): number {
    return this.#size;
  }

  chunks(): AsyncIterable<SourceChunk> {
    this.#iterating = true;
    if (this.kind === 'tlog') return this.#tlogChunks();
    return this.#timeBase.kind === 'boot' ? this.#bootPacedChunks(this.#timeBase.originUs!) : this.#rawChunks();
  }

  now(): number {
    return this.recordedTime ? this.#pacer.now() : this.#lastAtUs;
  }

  state(): string {
    return this.#state;
  }

  ended(): boolean {
    return this.#state === 'ended';
  }

  stats(): SourceStats {
    return { bytesRead: this.#bytesRead, chunks: this.#chunks, discardedBytes: this.#discarded, droppedBytes: 0 };
  }

  progress(): SourceProgress {
    return { bytesRead: this.#handedOut, totalBytes: this.#size };
  }

  async close(): Promise<void> {
    if (this.#abort.signal.aborted) return;
    this.#abort.abort();
    if (this.#state !== 'ended') this.#state = 'stopped';
    // A generator that is running closes the file itself when it sees the abort.
    if (!this.#iterating) await this.#release();
  }

  get #closed(): boolean {
    return this.#abort.signal.aborted;
  }

  async *#tlogChunks(): AsyncGenerator<SourceChunk, void, undefined> {
    const walker = new PositionedTlogWalker({ crcExtra: this.#opts.crcExtra, base: this.#position });
    try {
      yield* this.#timedFrames(walker, (r) => Number(r.timestampUs));
    } finally {
      await this.#release();
    }
  }

  /**
   * Frames of a walker over the file, each stamped with the time `timeOf` gives it and handed out when the
   * pacer says that time has come; the file's end ends the replay.
   */
  async *#timedFrames<F extends { frame: { bytes: Uint8Array }; start: number; end: number }>(
    walker: { push(data: Uint8Array): F[]; end(): F[]; stats: { bytesDiscarded: number } },
    timeOf: (f: F) => number,
  ): AsyncGenerator<SourceChunk, void, undefined> {
    for (;;) {
      const data = await this.#read();
      const frames = data ? walker.push(data) : walker.end();
      this.#discarded = walker.stats.bytesDiscarded;
      for (const f of frames) {
        const ts = timeOf(f);
        const wait = this.#pacer.delayFor(ts);
        if (wait > 0) await sleep(wait, this.#abort.signal);
        if (this.#closed) return;
        this.#pacer.emitted(ts);
        this.#chunks++;
        this.#handedOut = f.end;
        yield { bytes: f.frame.bytes, receivedAtUs: ts, position: { start: f.start, end: f.end } };
      }
      if (!data || this.#closed) break;
    }
    if (!this.#closed) {
      this.#state = 'ended';
      this.#handedOut = this.#size;
    }
  }

  async *#rawChunks(): AsyncGenerator<SourceChunk, void, undefined> {
    const { byteRate, speed } = this.#opts;
    const rate = byteRate && speed !== 'max' ? byteRate * (speed ?? 1) : undefined;
    // At a byte rate, about 20 chunks a second so the stream flows rather than lurches.
    const readBytes = rate ? Math.max(16, Math.min(this.#opts.readBytes ?? DEFAULT_READ_BYTES, Math.floor(rate / 20))) : undefined;
    const monoMs = this.#opts.monoMs ?? (() => performance.now());
    const startMs = monoMs();
    let sent = 0;
    try {
      for (;;) {
        const start = this.#position;
        const data = await this.#read(readBytes);
        if (!data || this.#closed) break;
        if (rate) {
          const due = startMs + (sent / rate) * 1000;
          const wait = due - monoMs();
          if (wait > 0) await sleep(wait, this.#abort.signal);
          if (this.#closed) return;
          sent += data.length;
        }
        this.#chunks++;
        this.#handedOut = start + data.length;
        this.#lastAtUs = this.#clock.nowUs();
        yield { bytes: data, receivedAtUs: this.#lastAtUs, position: { start, end: start + data.length } };
      }
      if (!this.#closed) {
        this.#state = 'ended';
        this.#handedOut = this.#size;
      }
    } finally {
      await this.#release();
    }
  }

  /**
   * A raw capture cut into frames, each stamped with its boot time on the capture's clock from `originUs`
   * and paced by it. A resumed replay first walks the bytes before `startAt` (framing only) so the clock
   * stands where the first run had it.
   */
  async *#bootPacedChunks(originUs: number): AsyncGenerator<SourceChunk, void, undefined> {
    const clock = new CaptureClock();
    const place = (f: { msgid: number; payload: Uint8Array; version: 1 | 2; sysid: number; compid: number }) =>
      originUs + clock.advance(f.sysid * 256 + f.compid, frameBootTime(f)?.us);
    try {
      if (this.#position > 0) {
        const before = new PositionedFramer({ crcExtra: this.#opts.crcExtra });
        for (let at = 0; at < this.#position && !this.#closed; ) {
          const data = await this.#readAt(at, Math.min(this.#opts.readBytes ?? DEFAULT_READ_BYTES, this.#position - at));
          if (data.length === 0) break;
          at += data.length;
          for (const pf of before.push(data)) place(pf.frame);
        }
        for (const pf of before.end()) place(pf.frame);
      }
      const walker = new PositionedFramer({ crcExtra: this.#opts.crcExtra, base: this.#position });
      yield* this.#timedFrames(walker, (pf) => place(pf.frame));
    } finally {
      await this.#release();
    }
  }

  /** `length` bytes at `at`, without moving the replay's position (what open() and a resume look at first). */
  async #readAt(at: number, length: number): Promise<Uint8Array> {
    const fh = this.#fh;
    if (!fh) throw new Error('FileReplaySource.open() was not called');
    const buf = Buffer.allocUnsafe(Math.max(0, length));
    const { bytesRead } = await fh.read(buf, 0, buf.length, at);
    return buf.subarray(0, bytesRead);
  }

  /** The next bytes of the file, or null at its end. A fresh buffer each time: frames are views into it. */
  async #read(length = this.#opts.readBytes ?? DEFAULT_READ_BYTES): Promise<Uint8Array | null> {
    const fh = this.#fh;
    if (!fh) throw new Error('FileReplaySource.open() was not called');
    if (this.#closed || this.#position >= this.#size) return null;
    const buf = Buffer.allocUnsafe(Math.min(length, this.#size - this.#position));
    const { bytesRead } = await fh.read(buf, 0, buf.length, this.#position);
    if (bytesRead === 0) return null;
    this.#position += bytesRead;
    this.#bytesRead += bytesRead;
    return buf.subarray(0, bytesRead);
  }

  async #release(): Promise<void> {
    const fh = this.#fh;
    this.#fh = null;
    await fh?.close();
  }
}
