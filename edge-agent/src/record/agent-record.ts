// The payload of one spool record: one MAVLink frame as it came off the link, behind a small header
// (agent-record v1). The spool's own record header already carries the seq (= frame_seq) and the
// receive time in µs, so neither is repeated here.
//
//   offset size  field (integers little-endian)
//        0    1  format version = 1
//        1    1  flags
//                  bit 0  SOURCE_POSITION: bytes 4..15 hold where this frame ended in a replayed file
//                  bit 1  RECORDED_TIME: the receive time is the one a recorder wrote (tlog), not the
//                         agent's clock
//                  bits 2-7 reserved, 0 (a reader refuses a record that sets them)
//        2    1  system id  (copied from the frame header: the uplink routes by it, one dataset per
//                            system id, without parsing MAVLink v1/v2 headers)
//        3    1  component id
//    [flag SOURCE_POSITION]
//        4    8  source position: byte offset in the file just after this frame's record
//       12    4  file tag: first 4 bytes of the file's fingerprint, so a resumed replay only trusts
//                positions written by the same file
//    then the frame: start byte through CRC (and signature), unmodified
//
// 4 bytes per live frame, 16 per replayed frame; a frame is 8 to 280 bytes.
import { MAVLINK_MAX_FRAME_LENGTH, MAVLINK_V1_STX, MAVLINK_V2_STX } from '@sortie/contracts/mavlink';

export const AGENT_RECORD_VERSION = 1;
export const AGENT_RECORD_FLAG_SOURCE_POSITION = 0x01;
export const AGENT_RECORD_FLAG_RECORDED_TIME = 0x02;
const KNOWN_FLAGS = AGENT_RECORD_FLAG_SOURCE_POSITION | AGENT_RECORD_FLAG_RECORDED_TIME;
export const AGENT_RECORD_HEADER_BYTES = 4;
export const AGENT_RECORD_POSITION_BYTES = 12;
/** Room for the largest record: header, position, a signed v2 frame with a 255-byte payload. */
export const AGENT_RECORD_MAX_BYTES = AGENT_RECORD_HEADER_BYTES + AGENT_RECORD_POSITION_BYTES + MAVLINK_MAX_FRAME_LENGTH;

export interface SourcePosition {
  /** Byte offset in the replayed file just after this frame's record. */
  readonly position: number;
  /** uint32 from the file's fingerprint. */
  readonly fileTag: number;
}

export interface AgentRecord {
  readonly sysid: number;
  readonly compid: number;
  readonly recordedTime: boolean;
  readonly source: SourcePosition | null;
  /** A view into the payload it was decoded from. */
  readonly frame: Uint8Array;
}

export class AgentRecordError extends Error {
  override readonly name = 'AgentRecordError';
}

const TWO_32 = 2 ** 32;

/** Writes the record into `target` at 0 and returns its length (target needs AGENT_RECORD_MAX_BYTES). */
export function encodeAgentRecord(
  target: Uint8Array,
  frame: Uint8Array,
  meta: { sysid: number; compid: number; recordedTime: boolean; source: SourcePosition | null },
): number {
  const flags = (meta.source ? AGENT_RECORD_FLAG_SOURCE_POSITION : 0) | (meta.recordedTime ? AGENT_RECORD_FLAG_RECORDED_TIME : 0);
  target[0] = AGENT_RECORD_VERSION;
  target[1] = flags;
  target[2] = meta.sysid;
  target[3] = meta.compid;
  let at = AGENT_RECORD_HEADER_BYTES;
  if (meta.source) {
    const { position, fileTag } = meta.source;
    if (!Number.isSafeInteger(position) || position < 0) throw new RangeError(`bad source position ${position}`);
    const view = new DataView(target.buffer, target.byteOffset, target.byteLength);
    view.setUint32(at, position % TWO_32, true);
    view.setUint32(at + 4, Math.floor(position / TWO_32), true);
    view.setUint32(at + 8, fileTag >>> 0, true);
    at += AGENT_RECORD_POSITION_BYTES;
  }
  target.set(frame, at);
  return at + frame.length;
}

export function decodeAgentRecord(payload: Uint8Array): AgentRecord {
  if (payload.length < AGENT_RECORD_HEADER_BYTES) throw new AgentRecordError(`record of ${payload.length} bytes is too short`);
  const version = payload[0]!;
  if (version !== AGENT_RECORD_VERSION) throw new AgentRecordError(`agent record version ${version} is not supported`);
  const flags = payload[1]!;
  if ((flags & ~KNOWN_FLAGS) !== 0) throw new AgentRecordError(`agent record sets unknown flags 0x${flags.toString(16)}`);
  let at = AGENT_RECORD_HEADER_BYTES;
  let source: SourcePosition | null = null;
  if (flags & AGENT_RECORD_FLAG_SOURCE_POSITION) {
    if (payload.length < at + AGENT_RECORD_POSITION_BYTES) throw new AgentRecordError('agent record is cut inside its source position');
    const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
    source = {
      position: view.getUint32(at + 4, true) * TWO_32 + view.getUint32(at, true),
      fileTag: view.getUint32(at + 8, true),
    };
    at += AGENT_RECORD_POSITION_BYTES;
  }
  const frame = payload.subarray(at);
  if (frame.length === 0 || (frame[0] !== MAVLINK_V1_STX && frame[0] !== MAVLINK_V2_STX)) {
    throw new AgentRecordError('agent record holds no MAVLink frame');
  }
  return {
    sysid: payload[2]!,
    compid: payload[3]!,
    recordedTime: (flags & AGENT_RECORD_FLAG_RECORDED_TIME) !== 0,
    source,
    frame,
  };
}
