// Telemetry logs (.tlog, as written by MAVProxy, Mission Planner and QGroundControl): each record is an
// 8-byte big-endian Unix timestamp in microseconds followed by one MAVLink frame. The same length walk
// as the raw framer, with the timestamp as a record prefix, so a record split across chunks at any byte
// is reassembled (node-mavlink's tlog splitter loses those) and junk is skipped with the same resync
// and unknown-id policy.

import { FrameWalker } from './framer.ts';
import type { MavlinkFrame, MavlinkFramerOptions } from './framer.ts';

export const TLOG_TIMESTAMP_LENGTH = 8;

export interface TlogRecord {
  /** Receive time written by the recorder, Unix epoch microseconds. */
  timestampUs: bigint;
  frame: MavlinkFrame;
}

export class TlogWalker extends FrameWalker<TlogRecord> {
  #view: DataView | undefined;
  #viewOf: Uint8Array | undefined;

  constructor(options: MavlinkFramerOptions = {}) {
    super(options.crcExtra, TLOG_TIMESTAMP_LENGTH);
  }

  protected override record(buf: Uint8Array, recordStart: number, frame: MavlinkFrame): TlogRecord {
    if (this.#viewOf !== buf) {
      this.#view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
      this.#viewOf = buf;
    }
    return { timestampUs: this.#view!.getBigUint64(recordStart, false), frame };
  }
}
