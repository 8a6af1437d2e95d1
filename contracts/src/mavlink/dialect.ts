// The pinned MAVLink dialect of mavlink-raw-v1, the one definition the edge agent frames with (its
// CRC_EXTRA table) and the cloud decodes with (its message classes). node-mavlink's dialect modules each
// hold only the messages defined in their own XML (ardupilotmega.REGISTRY lacks ATTITUDE, standard alone
// has AUTOPILOT_VERSION), so the dialect is the union of the six registries the contract names. Ids
// outside it are kept raw as `mavlink.UNKNOWN_<id>.raw`.
//
// This module loads node-mavlink (Node's stream, crypto and net), which is why the root
// `@sortie/contracts` entry does not re-export it: only `@sortie/contracts/mavlink` does.

import { ardupilotmega, common, icarous, minimal, standard, uavionix } from 'node-mavlink';
import type { MavLinkData, MavLinkDataConstructor, MavLinkPacketRegistry } from 'node-mavlink';
import type { CrcExtraLookup } from './framer.ts';

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

/**
 * The union of named registries, in order. Two registries defining one id with different classes
 * throw: the agent's CRC check and the cloud's stored signals would otherwise depend on merge order,
 * so both refuse to start rather than frame or decode silently wrong (a node-mavlink upgrade that
 * brings such a clash surfaces here). The same class listed twice is not a clash.
 */
export function mergeRegistries(registries: ReadonlyArray<readonly [name: string, registry: MavLinkPacketRegistry]>): Map<number, MessageClass> {
  const merged = new Map<number, MessageClass>();
  for (const [name, registry] of registries) {
    for (const clazz of Object.values(registry)) {
      const existing = merged.get(clazz.MSG_ID);
      if (existing && existing !== clazz) {
        throw new Error(`MAVLink id ${clazz.MSG_ID} defined twice: ${existing.MSG_NAME} and ${clazz.MSG_NAME} (${name})`);
      }
      merged.set(clazz.MSG_ID, clazz);
    }
  }
  return merged;
}

/** Message class by id, over the merged dialect. */
export const MAVLINK_REGISTRY: ReadonlyMap<number, MessageClass> = mergeRegistries(
  MAVLINK_DIALECTS.map((name) => [name, DIALECT_REGISTRIES[name]] as const),
);

// Dense table: the framer asks once per frame candidate, and ids in the dialect are all below 2^16.
const CRC_EXTRA_TABLE = (() => {
  let maxId = 0;
  for (const id of MAVLINK_REGISTRY.keys()) maxId = Math.max(maxId, id);
  const table = new Int16Array(maxId + 1).fill(-1);
  for (const [id, clazz] of MAVLINK_REGISTRY) table[id] = clazz.MAGIC_NUMBER;
  return table;
})();

/**
 * CRC_EXTRA of a message id in the merged dialect; the `crcExtra` option of the framers. Checking CRCs
 * is what lets a framer resync through line noise; ids outside the dialect still pass, on lookahead,
 * and the cloud keeps them as UNKNOWN_<id>. A wider table (node-mavlink's MSG_ID_MAGIC_NUMBER spans
 * every dialect) would drop frames of an id the vehicle defines differently as "CRC failures".
 */
export const crcExtraOf: CrcExtraLookup = (msgid) => {
  const extra = msgid < CRC_EXTRA_TABLE.length ? CRC_EXTRA_TABLE[msgid]! : -1;
  return extra < 0 ? undefined : extra;
};

export function messageClassOf(msgid: number): MessageClass | undefined {
  return MAVLINK_REGISTRY.get(msgid);
}

/**
 * A dialect field's C type → the dataType label of its signal, named like the TelemetryPoint value members
 * (what the channel list and the /docs catalogue show; arrays are labelled by their element type).
 */
export const MAVLINK_FIELD_DATA_TYPE: Readonly<Record<string, 'float' | 'double' | 'int32' | 'uint32' | 'int64' | 'uint64' | 'string'>> = {
  float: 'float',
  double: 'double',
  int8_t: 'int32',
  int16_t: 'int32',
  int32_t: 'int32',
  uint8_t: 'uint32',
  uint8_t_mavlink_version: 'uint32',
  uint16_t: 'uint32',
  uint32_t: 'uint32',
  int64_t: 'int64',
  uint64_t: 'uint64',
  char: 'string',
};
