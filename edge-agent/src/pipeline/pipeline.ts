// Source chunks → MAVLink framer → one spool record per frame (agent-record v1 payload, the
// frame's receive time in the spool record header, the spool seq as frame_seq), plus link-loss
// detection on the way. Appends are buffered and made durable by the spool's group commit (one
// fsync per batch); the pipeline only waits on the disk every `flushEveryBytes`, which bounds memory
// when a replay reads faster than the disk writes.
import { EventEmitter } from 'node:events';
import type { CrcExtraLookup } from '@sortie/contracts/mavlink';
import { PositionedFramer } from '../framing/positioned-walkers.ts';
import type { PositionedFrame } from '../framing/positioned-walkers.ts';
import type { LinkEvent, LinkLossDetector } from '../link/link-loss-detector.ts';
import { AGENT_RECORD_MAX_BYTES, encodeAgentRecord } from '../record/agent-record.ts';
import { SpoolFullError } from '../spool/spool.ts';
import type { Spool } from '../spool/spool.ts';
import type { Source, SourceChunk } from '../sources/source.ts';
import { ChunkLedger } from './chunk-ledger.ts';
import { isVehicleHeartbeat } from './vehicle-heartbeat.ts';

/** UDP peers beyond this many share one framer (a flood of spoofed peers must not grow memory). */
const MAX_LANES = 64;
const SHARED_LANE = '*';

export interface PipelineOptions {
  readonly source: Source;
  readonly spool: Spool;
  readonly detector: LinkLossDetector;
  readonly crcExtra?: CrcExtraLookup;
  /** Replay: tag written with each frame's file position (see agent-record.ts). */
  readonly fileTag?: number;
  /**
   * When the spool refuses a frame for lack of room ('reject-new' policy): true waits for the uplink
   * to free space (a file can be paused), false drops the frame and counts it (a live link cannot).
   */
  readonly waitWhenFull?: boolean;
  /** Called when waiting for room: return false to give up (e.g. no uplink will ever ack). */
  readonly onSpoolFull?: (error: SpoolFullError) => boolean;
  /** How often a refused frame is retried while waiting for room. Default 200 ms. */
  readonly fullRetryMs?: number;
  readonly tickIntervalMs?: number;
  readonly flushEveryBytes?: number;
}

export interface SystemStats {
  readonly sysid: number;
  readonly frames: number;
  readonly bytes: number;
  readonly lastFrameUs: number;
  /** 'unwatched' until the system sends a vehicle HEARTBEAT. */
  readonly link: 'up' | 'lost' | 'unwatched';
}

export interface PipelineStats {
  readonly chunks: number;
  readonly bytesIn: number;
  /** Frames the framer found. */
  readonly framesIn: number;
  /** Bytes in no frame: junk, corrupted or truncated frames (the source's own discards included). */
  readonly junkBytes: number;
  readonly crcFailures: number;
  /** Frames whose id is in no known dialect (kept, forwarded as UNKNOWN_<id>). */
  readonly unknownIds: number;
  /** Frames appended to the spool by this process. */
  readonly spooled: number;
  /** Frames the spool refused (full under 'reject-new' on a live link, or the disk stalled). */
  readonly notSpooled: number;
  /** From the spool: acknowledged by the cloud (this process), held unacknowledged, seqs. */
  readonly acknowledged: number;
  readonly unacknowledged: number;
  readonly durableSeq: bigint;
  readonly ackedSeq: bigint;
  readonly linkEvents: number;
  readonly systems: readonly SystemStats[];
}

/** Where the pipeline has got to in a replayed file: every frame up to `seq` ended before `position`. */
export interface SpooledPosition {
  readonly seq: bigint;
  readonly position: number;
}

type PipelineEvents = {
  /** A system id seen for the first time by this process. */
  system: [number];
  link: [LinkEvent];
  /** A frame the spool refused and the pipeline dropped. */
  dropped: [Error];
};

interface Lane {
  readonly framer: PositionedFramer;
  readonly ledger: ChunkLedger;
  framedBytes: number;
}

interface MutableSystemStats {
  frames: number;
  bytes: number;
  lastFrameUs: number;
}

export class Pipeline extends EventEmitter<PipelineEvents> {
  readonly #source: Source;
  readonly #spool: Spool;
  readonly #detector: LinkLossDetector;
  readonly #crcExtra: CrcExtraLookup | undefined;
  readonly #fileTag: number | undefined;
  readonly #waitWhenFull: boolean;
  readonly #onSpoolFull: (error: SpoolFullError) => boolean;
  readonly #tickIntervalMs: number;
  readonly #fullRetryMs: number;
  readonly #flushEveryBytes: number;
  readonly #recordedTime: boolean;

  readonly #lanes = new Map<string, Lane>();
  readonly #systems = new Map<number, MutableSystemStats>();
  readonly #scratch = new Uint8Array(AGENT_RECORD_MAX_BYTES);
  #chunks = 0;
  #bytesIn = 0;
  #framesIn = 0;
  #spooled = 0;
  #notSpooled = 0;
  #linkEvents = 0;
  #unflushedBytes = 0;
  #lastSpooled: SpooledPosition | null = null;
  #stopping = false;
  /** A refused frame was given up on at stop(): nothing after it may be spooled. */
  #abandoned = false;
  #running: Promise<void> | null = null;

  constructor(options: PipelineOptions) {
    super();
    this.#source = options.source;
    this.#spool = options.spool;
    this.#detector = options.detector;
    this.#crcExtra = options.crcExtra;
    this.#fileTag = options.fileTag;
    this.#waitWhenFull = options.waitWhenFull ?? false;
    this.#onSpoolFull = options.onSpoolFull ?? (() => true);
    this.#tickIntervalMs = options.tickIntervalMs ?? 250;
    this.#fullRetryMs = options.fullRetryMs ?? 200;
    this.#flushEveryBytes = options.flushEveryBytes ?? 4 * 1024 * 1024;
    this.#recordedTime = options.source.recordedTime;
  }

  /**
   * Runs until the source ends or stop() is called, then makes everything appended durable. At the
   * end of a replayed file, and always for a live link, frames the framer still held for lookahead
   * are settled; a replay stopped earlier leaves them to the resumed run, which re-reads those bytes.
   */
  run(): Promise<void> {
    this.#running ??= this.#run();
    return this.#running;
  }

  /** Stops reading the source; run() resolves once what was read is spooled and durable. */
  async stop(): Promise<void> {
    this.#stopping = true;
    await this.#source.close();
  }

  /** Last frame appended that carried a file position (replays only). */
  get lastSpooled(): SpooledPosition | null {
    return this.#lastSpooled;
  }

  stats(): PipelineStats {
    let junk = this.#source.stats().discardedBytes;
    let crcFailures = 0;
    let unknownIds = 0;
    for (const lane of this.#lanes.values()) {
      junk += lane.framer.stats.bytesDiscarded;
      crcFailures += lane.framer.stats.crcFailures;
      unknownIds += lane.framer.stats.unknownIds;
    }
    const spool = this.#spool.stats();
    const links = new Map(this.#detector.systems().map((s) => [s.sysid, s.state]));
    return {
      chunks: this.#chunks,
      bytesIn: this.#bytesIn,
      framesIn: this.#framesIn,
      junkBytes: junk,
      crcFailures,
      unknownIds,
      spooled: this.#spooled,
      notSpooled: this.#notSpooled,
      acknowledged: spool.acked,
      unacknowledged: spool.pending,
      durableSeq: spool.durableSeq,
      ackedSeq: spool.ackedSeq,
      linkEvents: this.#linkEvents,
      systems: [...this.#systems]
        .sort(([a], [b]) => a - b)
        .map(([sysid, s]) => ({ sysid, ...s, link: links.get(sysid) ?? 'unwatched' })),
    };
  }

  async #run(): Promise<void> {
    const ticker = setInterval(() => this.#tick(this.#source.now()), this.#tickIntervalMs);
    ticker.unref();
    try {
      for await (const chunk of this.#source.chunks()) {
        const blocked = this.#onChunk(chunk);
        if (blocked) await blocked;
        if (this.#abandoned) break;
        if (this.#unflushedBytes >= this.#flushEveryBytes) {
          this.#unflushedBytes = 0;
          await this.#spool.flush();
        }
      }
      // A replay stopped before its end leaves the framer's held-back bytes to the resumed run.
      const interruptedReplay = this.#fileTag !== undefined && !this.#source.ended();
      if (!interruptedReplay && !this.#abandoned) {
        for (const lane of this.#lanes.values()) {
          const pending = this.#spoolFrames(lane, lane.framer.end());
          if (pending) await pending;
        }
      }
    } finally {
      clearInterval(ticker);
      await this.#spool.flush();
    }
  }

  /** Returns a promise only when the spool is full and the pipeline must wait for room. */
  #onChunk(chunk: SourceChunk): Promise<void> | undefined {
    const length = chunk.bytes.length;
    this.#chunks++;
    this.#bytesIn += length;
    this.#unflushedBytes += length;
    this.#tick(chunk.receivedAtUs);
    const lane = this.#lane(chunk.origin);
    lane.ledger.add(length, chunk.receivedAtUs, chunk.position);
    const pending = this.#spoolFrames(lane, lane.framer.push(chunk.bytes));
    // Only once every frame of the chunk is located: the discard count already covers junk after them.
    const release = (): void => lane.ledger.release(lane.framedBytes + lane.framer.stats.bytesDiscarded);
    if (!pending) {
      release();
      return undefined;
    }
    return pending.then(release);
  }

  #spoolFrames(lane: Lane, frames: PositionedFrame[]): Promise<void> | undefined {
    for (let i = 0; i < frames.length; i++) {
      const pf = frames[i]!;
      const { at, source } = this.#observe(lane, pf);
      const length = encodeAgentRecord(this.#scratch, pf.frame.bytes, {
        sysid: pf.frame.sysid,
        compid: pf.frame.compid,
        recordedTime: this.#recordedTime,
        source,
      });
      const payload = this.#scratch.subarray(0, length);
      const position = source?.position ?? null;
      const error = this.#append(payload, at, position);
      if (!error) continue;
      if (this.#waitWhenFull && error.reason === 'max-bytes') {
        return this.#waitForRoom(payload.slice(), at, position, error).then((spooled) =>
          // Stopped while waiting: nothing after the refused frame may be spooled either, or a
          // resumed replay would start after a frame that is not in the spool.
          spooled ? this.#spoolFrames(lane, frames.slice(i + 1)) : undefined,
        );
      }
      this.#notSpooled++;
      this.emit('dropped', error);
    }
    return undefined;
  }

  /** Counts the frame and runs link-loss detection on it; returns its receive time and file position. */
  #observe(lane: Lane, pf: PositionedFrame): { at: number; source: { position: number; fileTag: number } | null } {
    const { frame } = pf;
    const origin = lane.ledger.locate(pf.end);
    const at = origin.receivedAtUs;
    lane.framedBytes += frame.bytes.length;
    this.#framesIn++;
    this.#countSystem(frame.sysid, frame.bytes.length, at);
    if (isVehicleHeartbeat(frame)) this.#detector.watch(frame.sysid, at);
    for (const e of this.#detector.frame(frame.sysid, at)) this.#linkEvent(e);
    const source =
      this.#fileTag !== undefined && origin.sourcePosition !== null
        ? { position: origin.sourcePosition, fileTag: this.#fileTag }
        : null;
    return { at, source };
  }

  #append(payload: Uint8Array, at: number, position: number | null): SpoolFullError | null {
    try {
      const seq = this.#spool.append(payload, at);
      this.#spooled++;
      if (position !== null) this.#lastSpooled = { seq, position };
      return null;
    } catch (err) {
      if (err instanceof SpoolFullError) return err;
      throw err;
    }
  }

  /**
   * The spool is full under 'reject-new': retry the refused frame until the uplink frees room.
   * False when stop() came first (the frame was not spooled; the run ends after this chunk).
   */
  async #waitForRoom(payload: Uint8Array, at: number, position: number | null, first: SpoolFullError): Promise<boolean> {
    let error: SpoolFullError | null = first;
    while (error) {
      if (!this.#onSpoolFull(error)) throw error;
      await new Promise((r) => setTimeout(r, this.#fullRetryMs));
      if (this.#stopping) {
        this.#abandoned = true;
        return false;
      }
      error = this.#append(payload, at, position);
    }
    return true;
  }

  #tick(nowUs: number): void {
    for (const e of this.#detector.tick(nowUs)) this.#linkEvent(e);
  }

  #linkEvent(e: LinkEvent): void {
    this.#linkEvents++;
    this.emit('link', e);
  }

  #countSystem(sysid: number, bytes: number, at: number): void {
    let s = this.#systems.get(sysid);
    if (!s) {
      s = { frames: 0, bytes: 0, lastFrameUs: at };
      this.#systems.set(sysid, s);
      this.emit('system', sysid);
    }
    s.frames++;
    s.bytes += bytes;
    if (at > s.lastFrameUs) s.lastFrameUs = at;
  }

  #lane(origin: string | undefined): Lane {
    let key = origin ?? '';
    let lane = this.#lanes.get(key);
    if (lane) return lane;
    if (this.#lanes.size >= MAX_LANES) {
      key = SHARED_LANE;
      lane = this.#lanes.get(key);
      if (lane) return lane;
    }
    lane = { framer: new PositionedFramer({ crcExtra: this.#crcExtra }), ledger: new ChunkLedger(), framedBytes: 0 };
    this.#lanes.set(key, lane);
    return lane;
  }
}
