import { describe, expect, it } from 'vitest';
import {
  AGENT_RECORD_MAX_BYTES,
  AgentRecordError,
  decodeAgentRecord,
  encodeAgentRecord,
} from './agent-record.ts';

// A real HEARTBEAT v2 frame layout is not needed here: only the start byte is checked.
const FRAME = Uint8Array.from([0xfd, 9, 0, 0, 7, 42, 1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0xaa, 0xbb]);

function encode(meta: Parameters<typeof encodeAgentRecord>[2], frame = FRAME): Uint8Array {
  const buf = new Uint8Array(AGENT_RECORD_MAX_BYTES);
  return buf.slice(0, encodeAgentRecord(buf, frame, meta));
}

describe('agent record v1', () => {
  it('lays out a live frame as version, flags, sysid, compid, frame', () => {
    const bytes = encode({ sysid: 42, compid: 1, recordedTime: false, source: null });
    expect(Array.from(bytes.subarray(0, 4))).toEqual([1, 0, 42, 1]);
    expect(bytes.subarray(4)).toEqual(FRAME);
    expect(decodeAgentRecord(bytes)).toEqual({ sysid: 42, compid: 1, recordedTime: false, source: null, frame: FRAME });
  });

  it('carries a replay position (uint64 LE) and file tag (uint32 LE) behind flag bits 0 and 1', () => {
    const position = 2 ** 40 + 0x01020304;
    const bytes = encode({ sysid: 255, compid: 190, recordedTime: true, source: { position, fileTag: 0xdeadbeef } });
    expect(Array.from(bytes.subarray(0, 16))).toEqual([
      1, 0b11, 255, 190, 0x04, 0x03, 0x02, 0x01, 0x00, 0x01, 0x00, 0x00, 0xef, 0xbe, 0xad, 0xde,
    ]);
    expect(bytes.length).toBe(16 + FRAME.length);
    const decoded = decodeAgentRecord(bytes);
    expect(decoded.source).toEqual({ position, fileTag: 0xdeadbeef });
    expect(decoded.recordedTime).toBe(true);
    expect(decoded.frame).toEqual(FRAME);
  });

  it('round-trips the largest frame', () => {
    const big = new Uint8Array(280).fill(7);
    big[0] = 0xfd;
    const bytes = encode({ sysid: 1, compid: 1, recordedTime: false, source: { position: 1, fileTag: 1 } }, big);
    expect(decodeAgentRecord(bytes).frame).toEqual(big);
  });

  it.each([
    ['too short', Uint8Array.of(1, 0, 1)],
    ['another version', Uint8Array.of(2, 0, 1, 1, 0xfd)],
    ['unknown flags', Uint8Array.of(1, 0x80, 1, 1, 0xfd)],
    ['cut in the position', Uint8Array.of(1, 1, 1, 1, 0, 0, 0)],
    ['no frame', Uint8Array.of(1, 0, 1, 1)],
    ['no start byte', Uint8Array.of(1, 0, 1, 1, 0x00, 1, 2)],
  ])('refuses a record that is %s', (_, bytes) => {
    expect(() => decodeAgentRecord(bytes)).toThrow(AgentRecordError);
  });
});
