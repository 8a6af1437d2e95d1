// The server's pinned MAVLink dialect. node-mavlink's dialect modules each hold only the messages
// defined in their own XML (ardupilotmega.REGISTRY lacks ATTITUDE, standard alone has
// AUTOPILOT_VERSION), so the dialect is the union of the six registries the mavlink-raw-v1 contract
// names. Ids outside it are kept raw as `mavlink.UNKNOWN_<id>.raw`.

import { ardupilotmega, common, icarous, minimal, standard, uavionix } from 'node-mavlink';
import type { MavLinkData, MavLinkDataConstructor, MavLinkPacketRegistry } from 'node-mavlink';

export type MessageClass = MavLinkDataConstructor<MavLinkData>;

export const MAVLINK_DIALECTS = ['minimal', 'standard', 'common', 'ardupilotmega', 'uavionix', 'icarous'] as const;

const DIALECT_REGISTRIES: Record<(typeof MAVLINK_DIALECTS)[number], MavLinkPacketRegistry> = {
  minimal: minimal.REGISTRY,
  standard: standard.REGISTRY,
  common: common.REGISTRY,
  ardupilotmega: ardupilotmega.REGISTRY,
  uavionix: uavionix.REGISTRY,
  icarous: icarous.REGISTRY,
};

function mergeRegistries(): Map<number, MessageClass> {
  const merged = new Map<number, MessageClass>();
  for (const dialect of MAVLINK_DIALECTS) {
    for (const clazz of Object.values(DIALECT_REGISTRIES[dialect])) {
      const existing = merged.get(clazz.MSG_ID);
      // Two dialects defining one id differently would make stored signals depend on merge order:
      // refuse to start rather than decode silently wrong (a node-mavlink upgrade would surface here).
      if (existing && existing !== clazz) {
        throw new Error(`MAVLink id ${clazz.MSG_ID} defined twice: ${existing.MSG_NAME} and ${clazz.MSG_NAME} (${dialect})`);
      }
      merged.set(clazz.MSG_ID, clazz);
    }
  }
  return merged;
}

/** Message class by id, over the merged dialect. */
export const MAVLINK_REGISTRY: ReadonlyMap<number, MessageClass> = mergeRegistries();

// Dense table: the framer asks once per frame, and ids in the dialect are all below 2^16.
const CRC_EXTRA_TABLE = (() => {
  let maxId = 0;
  for (const id of MAVLINK_REGISTRY.keys()) maxId = Math.max(maxId, id);
  const table = new Int16Array(maxId + 1).fill(-1);
  for (const [id, clazz] of MAVLINK_REGISTRY) table[id] = clazz.MAGIC_NUMBER;
  return table;
})();

/** CRC_EXTRA of a message id in the merged dialect; the `crcExtra` option of the framers. */
export function crcExtraOf(msgid: number): number | undefined {
  const extra = msgid < CRC_EXTRA_TABLE.length ? CRC_EXTRA_TABLE[msgid]! : -1;
  return extra < 0 ? undefined : extra;
}

export function messageClassOf(msgid: number): MessageClass | undefined {
  return MAVLINK_REGISTRY.get(msgid);
}
