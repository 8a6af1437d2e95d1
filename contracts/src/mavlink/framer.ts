// Streaming MAVLink v1/v2 frame walker. Pure (Uint8Array only, no Buffer, no `node:` imports) so the edge
// agent, the server and a browser all cut frames the same way. It does not decode: it finds frame
// boundaries by walking lengths and checks CRCs, so frames whose message id no dialect knows survive
// (node-mavlink's splitter drops them).
//
// Policy for a message id whose CRC_EXTRA is unknown (the CRC cannot be checked): the candidate frame is
// kept only when
//   1. no frame with a known id and a valid CRC starts inside it (junk with a start byte and a large
//      length byte must not swallow real frames), and
//   2. what follows it confirms the length walk: the end of the input (known only at `end()`; a live
//      stream waits for more bytes instead), or another frame whose CRC checks, or another unknown-id
//      frame confirmed the same way; after MAX_UNVERIFIED_CHAIN unknown frames in a row, structure alone
//      (start byte, understood incompat flags, complete frame) is trusted so streams of a dialect we do
//      not know still flow.
// Uniform junk fakes this only when a start byte's length byte lands exactly on the next frame (about
// once per 100k junk bytes), and even then no real frame is lost. The price: an unknown-id frame followed
// directly by garbage or by a corrupted frame is discarded. Frames with a known id are accepted on their
// CRC alone, never on lookahead.

import { mavlinkChecksum } from './crc.ts';

export const MAVLINK_V1_STX = 0xfe;
export const MAVLINK_V2_STX = 0xfd;
export const MAVLINK_IFLAG_SIGNED = 0x01;
export const MAVLINK_SIGNATURE_LENGTH = 13;
export const MAVLINK_V1_HEADER_LENGTH = 6;
export const MAVLINK_V2_HEADER_LENGTH = 10;
export const MAVLINK_CHECKSUM_LENGTH = 2;
/** v2 header + 255-byte payload + CRC + signature. */
export const MAVLINK_MAX_FRAME_LENGTH =
  MAVLINK_V2_HEADER_LENGTH + 255 + MAVLINK_CHECKSUM_LENGTH + MAVLINK_SIGNATURE_LENGTH;

/** How many unknown-id frames in a row are confirmed by lookahead before structure alone is trusted. */
const MAX_UNVERIFIED_CHAIN = 8;

/** CRC_EXTRA of a message id, or undefined when the dialect does not know the id. */
export type CrcExtraLookup = (msgid: number) => number | undefined;

export interface MavlinkFramerOptions {
  /** Without it no CRC can be checked and every frame is taken on lookahead (see the policy above). */
  crcExtra?: CrcExtraLookup;
}

/**
 * One frame. `payload` and `bytes` are views, not copies: into the chunk passed to `push` (so do not
 * mutate a chunk after pushing it) or into a buffer the framer allocated and never reuses.
 */
export interface MavlinkFrame {
  version: 1 | 2;
  msgid: number;
  sysid: number;
  compid: number;
  seq: number;
  /** Always 0 for v1. */
  incompatFlags: number;
  signed: boolean;
  /** As on the wire: a v2 payload may be truncated (trailing zero bytes removed by the sender). */
  payload: Uint8Array;
  /** The whole frame from the start byte through the CRC, plus the signature when signed. */
  bytes: Uint8Array;
  /** False when the id's CRC_EXTRA is unknown and the frame was accepted on lookahead. */
  crcChecked: boolean;
}

export interface FramerStats {
  frames: number;
  /** Bytes not part of any emitted frame (or record, for tlogs): junk, corrupted and truncated frames. */
  bytesDiscarded: number;
  /** Candidates with a known id whose CRC did not match (each costs one skipped byte, then resync). */
  crcFailures: number;
  /** Emitted frames whose id had no known CRC_EXTRA (`crcChecked: false`). */
  unknownIds: number;
}

const MORE = -1;
const REJECT = -2;

function isStx(b: number): boolean {
  return b === MAVLINK_V1_STX || b === MAVLINK_V2_STX;
}

function msgidAt(buf: Uint8Array, f: number): number {
  return buf[f] === MAVLINK_V2_STX ? buf[f + 7]! | (buf[f + 8]! << 8) | (buf[f + 9]! << 16) : buf[f + 5]!;
}

/**
 * Total length of the frame starting (with a start byte) at `f`, MORE when its header has not arrived,
 * REJECT when a v2 frame sets incompat flags we do not understand (the spec says to drop those, and it
 * filters junk).
 */
function frameLengthAt(buf: Uint8Array, f: number, n: number): number {
  if (buf[f] === MAVLINK_V2_STX) {
    if (f + 3 > n) return MORE;
    const flags = buf[f + 2]!;
    if ((flags & ~MAVLINK_IFLAG_SIGNED) !== 0) return REJECT;
    return (
      MAVLINK_V2_HEADER_LENGTH +
      buf[f + 1]! +
      MAVLINK_CHECKSUM_LENGTH +
      (flags & MAVLINK_IFLAG_SIGNED ? MAVLINK_SIGNATURE_LENGTH : 0)
    );
  }
  if (f + 2 > n) return MORE;
  return MAVLINK_V1_HEADER_LENGTH + buf[f + 1]! + MAVLINK_CHECKSUM_LENGTH;
}

function crcMatches(buf: Uint8Array, f: number, crcExtra: number): boolean {
  const header = buf[f] === MAVLINK_V2_STX ? MAVLINK_V2_HEADER_LENGTH : MAVLINK_V1_HEADER_LENGTH;
  const crcOffset = f + header + buf[f + 1]!;
  const wire = buf[crcOffset]! | (buf[crcOffset + 1]! << 8);
  return mavlinkChecksum(buf, f, crcOffset, crcExtra) === wire;
}

function frameAt(buf: Uint8Array, f: number, length: number, crcChecked: boolean): MavlinkFrame {
  const plen = buf[f + 1]!;
  if (buf[f] === MAVLINK_V2_STX) {
    const incompatFlags = buf[f + 2]!;
    return {
      version: 2,
      msgid: buf[f + 7]! | (buf[f + 8]! << 8) | (buf[f + 9]! << 16),
      sysid: buf[f + 5]!,
      compid: buf[f + 6]!,
      seq: buf[f + 4]!,
      incompatFlags,
      signed: (incompatFlags & MAVLINK_IFLAG_SIGNED) !== 0,
      payload: buf.subarray(f + MAVLINK_V2_HEADER_LENGTH, f + MAVLINK_V2_HEADER_LENGTH + plen),
      bytes: buf.subarray(f, f + length),
      crcChecked,
    };
  }
  return {
    version: 1,
    msgid: buf[f + 5]!,
    sysid: buf[f + 3]!,
    compid: buf[f + 4]!,
    seq: buf[f + 2]!,
    incompatFlags: 0,
    signed: false,
    payload: buf.subarray(f + MAVLINK_V1_HEADER_LENGTH, f + MAVLINK_V1_HEADER_LENGTH + plen),
    bytes: buf.subarray(f, f + length),
    crcChecked,
  };
}

const noCrcExtra: CrcExtraLookup = () => undefined;

/**
 * The length walk shared by the raw-stream framer and the tlog walker: records are `prefix` bytes
 * (0 for a raw stream, the 8-byte timestamp for a tlog) followed by one frame. Partial records are
 * carried across `push` calls, so the result does not depend on how the input is chunked.
 */
export abstract class FrameWalker<T> {
  readonly stats: FramerStats = { frames: 0, bytesDiscarded: 0, crcFailures: 0, unknownIds: 0 };
  readonly #crcExtra: CrcExtraLookup;
  readonly #prefix: number;
  #carry = new Uint8Array(1024);
  #carryLength = 0;
  /** Carried bytes needed before walking again can make progress (spares re-walks on tiny chunks). */
  #need = 0;
  /** Set whenever a check returns MORE: the end offset the check needed. */
  #wantEnd = 0;

  protected constructor(crcExtra: CrcExtraLookup | undefined, prefix: number) {
    this.#crcExtra = crcExtra ?? noCrcExtra;
    this.#prefix = prefix;
  }

  protected abstract record(buf: Uint8Array, recordStart: number, frame: MavlinkFrame): T;

  /** Feeds bytes; returns the records completed by them, in order. */
  push(chunk: Uint8Array): T[] {
    if (this.#carryLength === 0) return this.#walk(chunk, false);
    const total = this.#carryLength + chunk.length;
    if (total < this.#need) {
      this.#appendCarry(chunk);
      return [];
    }
    const work = new Uint8Array(total);
    work.set(this.#carry.subarray(0, this.#carryLength));
    work.set(chunk, this.#carryLength);
    this.#carryLength = 0;
    return this.#walk(work, false);
  }

  /** Declares the end of the input: settles what was waiting for lookahead, discards a truncated tail. */
  end(): T[] {
    const work = this.#carry.slice(0, this.#carryLength);
    this.#carryLength = 0;
    this.#need = 0;
    return this.#walk(work, true);
  }

  #appendCarry(bytes: Uint8Array): void {
    const needed = this.#carryLength + bytes.length;
    if (needed > this.#carry.length) {
      const grown = new Uint8Array(Math.max(needed, this.#carry.length * 2));
      grown.set(this.#carry.subarray(0, this.#carryLength));
      this.#carry = grown;
    }
    this.#carry.set(bytes, this.#carryLength);
    this.#carryLength = needed;
  }

  #walk(buf: Uint8Array, final: boolean): T[] {
    const out: T[] = [];
    const n = buf.length;
    const prefix = this.#prefix;
    const stats = this.stats;
    let pos = 0;
    while (pos < n) {
      let s = pos + prefix;
      while (s < n && !isStx(buf[s]!)) s++;
      if (s >= n) {
        // The last `prefix` bytes may be the timestamp of a record whose start byte has not arrived.
        const keep = final ? n : Math.max(pos, n - prefix);
        stats.bytesDiscarded += keep - pos;
        if (keep < n) {
          this.#appendCarry(buf.subarray(keep));
          this.#need = prefix + 1;
        }
        return out;
      }
      const start = s - prefix;
      stats.bytesDiscarded += start - pos;
      pos = start;

      const length = frameLengthAt(buf, s, n);
      if (length === MORE || (length > 0 && s + length > n)) {
        if (final) {
          stats.bytesDiscarded++;
          pos++;
          continue;
        }
        this.#wantEnd = length === MORE ? s + 3 : s + length;
        break;
      }
      if (length === REJECT) {
        stats.bytesDiscarded++;
        pos++;
        continue;
      }
      const extra = this.#crcExtra(msgidAt(buf, s));
      let checked: boolean;
      if (extra !== undefined) {
        if (!crcMatches(buf, s, extra)) {
          stats.crcFailures++;
          stats.bytesDiscarded++;
          pos++;
          continue;
        }
        checked = true;
      } else {
        let confirmed = this.#hidesVerifiedFrame(buf, s + 1, s + length, n, final);
        if (confirmed === 1) confirmed = this.#confirmedBy(buf, s + length, n, final, 0);
        if (confirmed === MORE) break;
        if (confirmed === REJECT) {
          stats.bytesDiscarded++;
          pos++;
          continue;
        }
        checked = false;
        stats.unknownIds++;
      }
      stats.frames++;
      out.push(this.record(buf, start, frameAt(buf, s, length, checked)));
      pos = s + length;
    }
    if (pos < n) {
      this.#appendCarry(buf.subarray(pos));
      this.#need = this.#wantEnd - pos;
    }
    return out;
  }

  /** Does the record starting at `r` confirm the length walk that led to it? 1, REJECT or MORE. */
  #confirmedBy(buf: Uint8Array, r: number, n: number, final: boolean, depth: number): number {
    const s = r + this.#prefix;
    // Running out of input while everything seen so far fits is a confirmation only at the end.
    if (s >= n) return this.#outOfInput(final, s + 1);
    if (!isStx(buf[s]!)) return REJECT;
    const length = frameLengthAt(buf, s, n);
    if (length === REJECT) return REJECT;
    if (length === MORE) return this.#outOfInput(final, s + 3);
    if (s + length > n) return this.#outOfInput(final, s + length);
    const extra = this.#crcExtra(msgidAt(buf, s));
    if (extra !== undefined) return crcMatches(buf, s, extra) ? 1 : REJECT;
    if (depth >= MAX_UNVERIFIED_CHAIN) return 1;
    const clean = this.#hidesVerifiedFrame(buf, s + 1, s + length, n, final);
    if (clean !== 1) return clean;
    return this.#confirmedBy(buf, s + length, n, final, depth + 1);
  }

  /** 1 when no known-id frame with a valid CRC starts in `buf[from, to)`, REJECT when one does, or MORE. */
  #hidesVerifiedFrame(buf: Uint8Array, from: number, to: number, n: number, final: boolean): number {
    for (let s = from; s < to; s++) {
      if (!isStx(buf[s]!)) continue;
      const length = frameLengthAt(buf, s, n);
      if (length === REJECT) continue;
      if (length === MORE || s + length > n) {
        if (final) continue;
        // Only a known id can hide a frame: once the header shows an unknown id, stop waiting for it.
        const headerEnd = s + (buf[s] === MAVLINK_V2_STX ? MAVLINK_V2_HEADER_LENGTH : MAVLINK_V1_HEADER_LENGTH);
        if (headerEnd <= n && this.#crcExtra(msgidAt(buf, s)) === undefined) continue;
        this.#wantEnd = headerEnd > n ? headerEnd : s + length;
        return MORE;
      }
      const extra = this.#crcExtra(msgidAt(buf, s));
      if (extra !== undefined && crcMatches(buf, s, extra)) return REJECT;
    }
    return 1;
  }

  #outOfInput(final: boolean, wantEnd: number): number {
    if (final) return 1;
    this.#wantEnd = wantEnd;
    return MORE;
  }
}

/** Cuts a raw MAVLink byte stream (serial, UDP, a `.mavlink`/`.bin` capture) into frames. */
export class MavlinkFramer extends FrameWalker<MavlinkFrame> {
  constructor(options: MavlinkFramerOptions = {}) {
    super(options.crcExtra, 0);
  }

  protected override record(_buf: Uint8Array, _recordStart: number, frame: MavlinkFrame): MavlinkFrame {
    return frame;
  }
}

export type SingleFrameReason = 'start-byte' | 'incompat-flags' | 'length' | 'crc';

export type SingleFrameResult = { ok: true; frame: MavlinkFrame } | { ok: false; reason: SingleFrameReason };

/**
 * Checks that `bytes` hold exactly one complete frame (the mavlink-raw-v1 rule for one telemetry point).
 * An unknown id cannot be CRC-checked and is returned with `crcChecked: false`.
 */
export function parseSingleFrame(bytes: Uint8Array, crcExtra: CrcExtraLookup = noCrcExtra): SingleFrameResult {
  const reason = checkSingleFrame(bytes, 0, bytes.length, crcExtra);
  if (reason !== undefined) return { ok: false, reason };
  return { ok: true, frame: frameAt(bytes, 0, bytes.length, crcExtra(msgidAt(bytes, 0)) !== undefined) };
}

/**
 * parseSingleFrame's check of `buf[start, end)` without building a frame (the server's ingest path
 * reads the header in place with readFrameHeader): why it is not exactly one valid frame, or undefined.
 */
export function checkSingleFrame(buf: Uint8Array, start: number, end: number, crcExtra: CrcExtraLookup = noCrcExtra): SingleFrameReason | undefined {
  if (end <= start || !isStx(buf[start]!)) return 'start-byte';
  const length = frameLengthAt(buf, start, end);
  if (length === REJECT) return 'incompat-flags';
  if (length !== end - start) return 'length';
  const extra = crcExtra(msgidAt(buf, start));
  if (extra !== undefined && !crcMatches(buf, start, extra)) return 'crc';
  return undefined;
}

/** A frame's header fields, read in place (readFrameHeader): one record reused for frame after frame. */
export interface FrameHeader {
  version: 1 | 2;
  msgid: number;
  sysid: number;
  compid: number;
  /** Where the payload starts in the buffer, and its length as sent (MAVLink 2 trims trailing zeros). */
  payloadOffset: number;
  payloadLength: number;
}

/** The header of the frame starting at `buf[f]` (checked first: checkSingleFrame), into `out`. */
export function readFrameHeader(buf: Uint8Array, f: number, out: FrameHeader): void {
  out.payloadLength = buf[f + 1]!;
  if (buf[f] === MAVLINK_V2_STX) {
    out.version = 2;
    out.msgid = buf[f + 7]! | (buf[f + 8]! << 8) | (buf[f + 9]! << 16);
    out.sysid = buf[f + 5]!;
    out.compid = buf[f + 6]!;
    out.payloadOffset = f + MAVLINK_V2_HEADER_LENGTH;
  } else {
    out.version = 1;
    out.msgid = buf[f + 5]!;
    out.sysid = buf[f + 3]!;
    out.compid = buf[f + 4]!;
    out.payloadOffset = f + MAVLINK_V1_HEADER_LENGTH;
  }
}
