// The contracts' frame walk (MavlinkFramer / TlogWalker: same length walk, CRC checks, resync and
// unknown-id policy) plus where each record lies in the input. The agent needs that to resume a
// replay after a crash at exactly the frame after the last one spooled: no frame lost, none twice.
//
// FrameWalker hands `record()` the buffer it is walking and the record's offset in it. That buffer
// always ends at the last byte pushed so far (it is the chunk itself, carried bytes plus the chunk,
// or the carried tail at end()), so its first byte sits at `pushed - buf.length` in the input.
// positioned-walkers.test.ts checks that against the real captures at random chunk sizes.
import { FrameWalker, TLOG_TIMESTAMP_LENGTH } from '@sortie/contracts/mavlink';
import type { CrcExtraLookup, MavlinkFrame } from '@sortie/contracts/mavlink';

export interface PositionedFrame {
  frame: MavlinkFrame;
  /** Input offset of the record's first byte (the tlog timestamp, or the frame's start byte). */
  start: number;
  /** Input offset just after the record. */
  end: number;
}

export interface PositionedTlogRecord extends PositionedFrame {
  /** Receive time the recorder wrote, Unix epoch microseconds. */
  timestampUs: bigint;
}

abstract class PositionedWalker<T> extends FrameWalker<T> {
  /** Offset of the first pushed byte in the input (where a resumed replay started reading). */
  readonly #base: number;
  #pushed = 0;

  protected constructor(crcExtra: CrcExtraLookup | undefined, prefix: number, base: number) {
    super(crcExtra, prefix);
    this.#base = base;
  }

  override push(chunk: Uint8Array): T[] {
    // Counted first: record() runs inside the walk and needs the total including this chunk.
    this.#pushed += chunk.length;
    return super.push(chunk);
  }

  /** Bytes pushed so far (not counting `base`). */
  get pushed(): number {
    return this.#pushed;
  }

  protected startOf(buf: Uint8Array, recordStart: number): number {
    return this.#base + this.#pushed - buf.length + recordStart;
  }
}

/** A raw MAVLink byte stream cut into frames, each with its byte range in the stream. */
export class PositionedFramer extends PositionedWalker<PositionedFrame> {
  constructor(options: { crcExtra?: CrcExtraLookup; base?: number } = {}) {
    super(options.crcExtra, 0, options.base ?? 0);
  }

  protected override record(buf: Uint8Array, recordStart: number, frame: MavlinkFrame): PositionedFrame {
    const start = this.startOf(buf, recordStart);
    return { frame, start, end: start + frame.bytes.length };
  }
}

/** A tlog cut into (timestamp, frame) records, each with its byte range in the file. */
export class PositionedTlogWalker extends PositionedWalker<PositionedTlogRecord> {
  #view: DataView | undefined;
  #viewOf: Uint8Array | undefined;

  constructor(options: { crcExtra?: CrcExtraLookup; base?: number } = {}) {
    super(options.crcExtra, TLOG_TIMESTAMP_LENGTH, options.base ?? 0);
  }

  protected override record(buf: Uint8Array, recordStart: number, frame: MavlinkFrame): PositionedTlogRecord {
    if (this.#viewOf !== buf) {
      this.#view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
      this.#viewOf = buf;
    }
    const start = this.startOf(buf, recordStart);
    return {
      frame,
      timestampUs: this.#view!.getBigUint64(recordStart, false),
      start,
      end: start + TLOG_TIMESTAMP_LENGTH + frame.bytes.length,
    };
  }
}
