// Test and benchmark support: the shared MAVLink captures as mavlink-raw-v1 points.

import type { MessageInitShape } from '@bufbuild/protobuf';
import type { TelemetryPointSchema } from '@sortie/contracts';
import { crcExtraOf, type MavlinkFrame, MavlinkFramer, TlogWalker } from '@sortie/contracts/mavlink';
import { readFixture } from '@sortie/contracts/testing';
import { frameTime } from './decode.ts';

export type PointInit = MessageInitShape<typeof TelemetryPointSchema>;

export interface FixtureFrame {
  frame: MavlinkFrame;
  /** The agent's receive time: the tlog's recorded time, or a synthetic clock for raw captures. */
  receivedUs: number;
}

/** Raw captures carry no receive times; the agent would stamp them with its clock. */
export const RAW_CAPTURE_START_US = Date.UTC(2024, 4, 1, 12, 0, 0) * 1000;

/** Link latency of the synthetic receive clock of raw captures. */
export const RAW_CAPTURE_LATENCY_US = 2_000;

/**
 * Every frame of a capture, in order: a `.tlog` with its recorded times; a raw capture with the receive
 * times an agent would have stamped, from `startUs` on: the vehicle's boot clock as the frames report
 * it (never running backwards), plus a small latency.
 */
export function fixtureFrames(name: string, options: { startUs?: number } = {}): FixtureFrame[] {
  const data = readFixture(name);
  if (name.endsWith('.tlog')) {
    const walker = new TlogWalker({ crcExtra: crcExtraOf });
    return [...walker.push(data), ...walker.end()].map((r) => ({ frame: r.frame, receivedUs: Number(r.timestampUs) }));
  }
  const framer = new MavlinkFramer({ crcExtra: crcExtraOf });
  const start = options.startUs ?? RAW_CAPTURE_START_US;
  let firstBoot: number | undefined;
  let received = start + RAW_CAPTURE_LATENCY_US;
  return [...framer.push(data), ...framer.end()].map((frame) => {
    const bootUs = frameTime(frame)?.bootUs;
    if (bootUs !== undefined) {
      firstBoot ??= Number(bootUs);
      received = Math.max(received, start + Number(bootUs) - firstBoot + RAW_CAPTURE_LATENCY_US);
    }
    return { frame, receivedUs: received };
  });
}

export function timestampOf(us: number): { seconds: bigint; nanos: number } {
  const seconds = Math.floor(us / 1_000_000);
  return { seconds: BigInt(seconds), nanos: (us - seconds * 1_000_000) * 1000 };
}

/** One mavlink-raw-v1 point. */
export function framePoint(bytes: Uint8Array, receivedUs: number, frameSeq: number): PointInit {
  return { timestamp: timestampOf(receivedUs), type: { case: 'bytes', value: bytes }, frameSeq: BigInt(frameSeq) };
}

/** The capture's frames as points, frame_seq from `firstSeq` on. */
export function fixturePoints(frames: readonly FixtureFrame[], firstSeq = 1): PointInit[] {
  return frames.map((f, i) => framePoint(f.frame.bytes, f.receivedUs, firstSeq + i));
}
