// Benchmark and test support: a long flight made of replays of a capture, each replay's vehicle clocks
// moved on, so the replays join into one continuous boot (one session, one aligned timeline) instead of
// a reboot per replay. Only sample clocks move (the contracts' time-field catalogue); event times and
// data stay as recorded.

import { crcExtraOf, type MavlinkFrame } from '@sortie/contracts/mavlink';
import { buildFrame } from '@sortie/contracts/testing';
import { messageLayoutOf, type FieldReader } from './decode.ts';
import type { FixtureFrame } from './fixture-frames.ts';

/** The frame's bytes with its sample clocks moved `shiftUs` later (a clock at 0, "not set", stays 0). */
export function shiftFrameClocks(frame: MavlinkFrame, shiftUs: number): Uint8Array {
  const layout = messageLayoutOf(frame.msgid);
  const crcExtra = crcExtraOf(frame.msgid);
  if (!layout || crcExtra === undefined || frame.signed) return frame.bytes;
  const clocks = [layout.timeBootMs, layout.timeBootUs, layout.timeUsec, layout.timeUnixUsec].filter((f): f is FieldReader => f !== undefined);
  if (clocks.length === 0) return frame.bytes;
  const payload = new Uint8Array(Math.max(frame.payload.length, ...clocks.map((c) => c.offset + c.size)));
  payload.set(frame.payload);
  const view = new DataView(payload.buffer);
  for (const c of clocks) {
    if (c.extension && frame.version === 1) continue;
    if (c.size === 4) {
      const ms = view.getUint32(c.offset, true);
      if (ms !== 0) view.setUint32(c.offset, ms + Math.round(shiftUs / 1000), true);
    } else {
      const us = view.getBigUint64(c.offset, true);
      if (us !== 0n) view.setBigUint64(c.offset, us + BigInt(shiftUs), true);
    }
  }
  // Keep the wire length (a v2 sender truncates trailing zeros; a clock moved off 0 is not a trailing zero).
  let length = payload.length;
  if (frame.version === 2) while (length > frame.payload.length && payload[length - 1] === 0) length--;
  return buildFrame({ version: frame.version, msgid: frame.msgid, payload: payload.subarray(0, length), crcExtra, seq: frame.seq, sysid: frame.sysid, compid: frame.compid });
}

/**
 * Replay `replay` of a capture: every frame's receive time and sample clocks `replay × spanUs` later,
 * so replays 0, 1, 2, … are one continuous flight.
 */
export function replayFrames(frames: readonly FixtureFrame[], replay: number, spanUs: number): Array<{ bytes: Uint8Array; receivedUs: number }> {
  const shift = replay * spanUs;
  return frames.map((f) => ({ bytes: replay === 0 ? f.frame.bytes : shiftFrameClocks(f.frame, shift), receivedUs: f.receivedUs + shift }));
}
