// Which systems count as vehicles for link-loss detection: those that announce themselves with a
// HEARTBEAT from an autopilot. Ground stations (a tlog records the GCS's own heartbeats under system
// 255) and components without an autopilot are heard too, but their silence is no vehicle outage.
import type { MavlinkFrame } from '@sortie/contracts/mavlink';

const HEARTBEAT = 0;
/** HEARTBEAT payload: custom_mode uint32, then type, autopilot, base_mode, system_status, mavlink_version. */
const TYPE_OFFSET = 4;
const AUTOPILOT_OFFSET = 5;
const MAV_TYPE_GCS = 6;
const MAV_AUTOPILOT_INVALID = 8;

export function isVehicleHeartbeat(frame: MavlinkFrame): boolean {
  if (frame.msgid !== HEARTBEAT) return false;
  // A v2 sender trims trailing zero bytes from the payload: a missing byte reads as 0.
  const type = frame.payload[TYPE_OFFSET] ?? 0;
  const autopilot = frame.payload[AUTOPILOT_OFFSET] ?? 0;
  return type !== MAV_TYPE_GCS && autopilot !== MAV_AUTOPILOT_INVALID;
}
