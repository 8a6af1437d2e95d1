// Test and benchmark support: MAVLink streams that reproduce what real autopilots send, built with
// node-mavlink's own serializer (so the bytes are what a PX4 or ArduPilot would put on the wire), and
// the real PX4 capture that node-mavlink ships among its examples.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { common, minimal, MavLinkProtocolV2, type MavLinkData } from 'node-mavlink';
import { crcExtraOf, MavlinkFramer, type MavlinkFrame } from '@sortie/contracts/mavlink';
import type { FixtureFrame } from './fixture-frames.ts';

/** Where the PX4-like stream's agent clock starts (its receive times). */
export const PX4_LIKE_START_US = Date.UTC(2026, 2, 14, 14, 5, 0) * 1000;

/** Boot clock (ms) of the first frame: 3.5 hours into the boot, as in the real PX4 capture. */
export const PX4_LIKE_BOOT_MS = 12_658_196;

/** HOME_POSITION.time_usec: when home was set, 6.3 s after boot; the same value in every HOME_POSITION. */
export const PX4_LIKE_HOME_SET_US = 6_332_000n;

export interface Px4LikeStream {
  frames: FixtureFrame[];
  /** Index in `frames` of the first frame after the reboot. */
  rebootAt: number;
  /** ATTITUDE frames before and after the reboot. */
  attitudes: [number, number];
}

/**
 * A PX4-like stream of one system (sysid 1, compid 1): 20 s of ATTITUDE at 50 Hz on a boot clock that
 * starts at ~12,658 s, HEARTBEAT at 1 Hz (no time field) and HOME_POSITION at 2 Hz carrying the time
 * home was set (~6 s), interleaved as PX4 sends them; then a genuine reboot: the boot clock restarts at
 * ~1.5 s and runs another 10 s, with home set again at ~1.2 s. Receive times follow the agent's clock
 * with a deterministic jitter of a few ms (a link never delivers at a constant latency).
 */
export function px4LikeStream(): Px4LikeStream {
  const protocol = new MavLinkProtocolV2(1, 1);
  const frames: FixtureFrame[] = [];
  let seq = 0;
  let jitter = 12345;
  const nextJitter = () => {
    jitter = (jitter * 1103515245 + 12345) % 2147483648;
    return 1_000 + (jitter % 4_000);
  };
  const push = (message: MavLinkData, receivedUs: number) => {
    const bytes = new Uint8Array(protocol.serialize(message, seq++ & 0xff));
    frames.push({ frame: frameOf(bytes), receivedUs });
  };
  const run = (bootStartMs: number, agentStartUs: number, seconds: number, homeSetUs: bigint) => {
    let attitudes = 0;
    for (let tick = 0; tick < seconds * 50; tick++) {
      const bootMs = bootStartMs + tick * 20;
      const receivedUs = agentStartUs + tick * 20_000 + nextJitter();
      const attitude = new common.Attitude();
      attitude.timeBootMs = bootMs;
      attitude.roll = Math.fround(0.1 * Math.sin(tick / 25));
      attitude.pitch = Math.fround(0.05 * Math.cos(tick / 40));
      attitude.yaw = Math.fround(1.5 + tick / 10_000);
      push(attitude, receivedUs);
      attitudes++;
      if (tick % 25 === 7) {
        const home = new common.HomePosition();
        home.latitude = 473_977_420;
        home.longitude = 85_455_940;
        home.altitude = 488_000;
        home.q = [1, 0, 0, 0];
        home.timeUsec = homeSetUs;
        push(home, receivedUs + 300);
      }
      if (tick % 50 === 13) {
        const heartbeat = new minimal.Heartbeat();
        heartbeat.type = minimal.MavType.QUADROTOR;
        heartbeat.autopilot = minimal.MavAutopilot.PX4;
        heartbeat.mavlinkVersion = 3;
        push(heartbeat, receivedUs + 500);
      }
    }
    return attitudes;
  };
  const before = run(PX4_LIKE_BOOT_MS, PX4_LIKE_START_US, 20, PX4_LIKE_HOME_SET_US);
  const rebootAt = frames.length;
  // The reboot takes ~30 s of agent time; the new boot's first message arrives 1.5 s into it.
  const after = run(1_500, PX4_LIKE_START_US + 50_000_000, 10, 1_200_000n);
  return { frames, rebootAt, attitudes: [before, after] };
}

function frameOf(bytes: Uint8Array): MavlinkFrame {
  const framer = new MavlinkFramer({ crcExtra: crcExtraOf });
  const [frame, ...rest] = [...framer.push(bytes), ...framer.end()];
  if (!frame || rest.length > 0) throw new Error('node-mavlink serialized something other than one frame');
  return frame;
}

/** The real PX4 capture in node-mavlink's examples: 3,412 frames, one boot, boot clock 12,658 s → 12,668 s. */
export const PX4_CAPTURE = 'mavlink-v2-3412-packets.bin';

/**
 * The real PX4 capture's frames, with receive times an agent would stamp (the raw capture has none):
 * its boot clock relative to the first frame, plus a latency, never running backwards.
 */
export function px4CaptureFrames(startUs = PX4_LIKE_START_US): FixtureFrame[] {
  const require = createRequire(import.meta.url);
  const path = join(dirname(require.resolve('node-mavlink/package.json')), 'examples', PX4_CAPTURE);
  const framer = new MavlinkFramer({ crcExtra: crcExtraOf });
  const data = new Uint8Array(readFileSync(path));
  let firstBootMs: number | undefined;
  let received = startUs;
  return [...framer.push(data), ...framer.end()].map((frame) => {
    // ATTITUDE (30) carries time_boot_ms at offset 0.
    if (frame.msgid === 30) {
      const bootMs = new DataView(frame.payload.buffer, frame.payload.byteOffset, frame.payload.byteLength).getUint32(0, true);
      firstBootMs ??= bootMs;
      received = Math.max(received, startUs + (bootMs - firstBootMs) * 1000 + 2_000);
    }
    return { frame, receivedUs: received };
  });
}
