// CRC_EXTRA per message id over the dialect the server pins for mavlink-raw-v1 (the union of
// node-mavlink's minimal, standard, common, ardupilotmega, uavionix and icarous registries, as in
// cloud/src/telemetry/narrow/registry.ts). The agent only frames, but checking CRCs here is what lets the
// framer resync through line noise; ids outside the dialect still pass, on lookahead, exactly as
// the server will see them (UNKNOWN_<id>). A wider table (node-mavlink's MSG_ID_MAGIC_NUMBER spans
// every dialect) would drop frames of an id the vehicle defines differently as "CRC failures".
import { ardupilotmega, common, icarous, minimal, standard, uavionix } from 'node-mavlink';
import type { CrcExtraLookup } from '@sortie/contracts/mavlink';

const REGISTRIES = [minimal.REGISTRY, standard.REGISTRY, common.REGISTRY, ardupilotmega.REGISTRY, uavionix.REGISTRY, icarous.REGISTRY];

// Dense table: asked once per frame candidate, and every id in the dialect is below 2^16.
const TABLE = (() => {
  const entries: Array<[number, number]> = [];
  for (const registry of REGISTRIES) {
    for (const clazz of Object.values(registry)) entries.push([clazz.MSG_ID, clazz.MAGIC_NUMBER]);
  }
  const maxId = entries.reduce((m, [id]) => Math.max(m, id), 0);
  const table = new Int16Array(maxId + 1).fill(-1);
  for (const [id, extra] of entries) table[id] = extra;
  return table;
})();

export const crcExtraOf: CrcExtraLookup = (msgid) => {
  const extra = msgid < TABLE.length ? TABLE[msgid]! : -1;
  return extra < 0 ? undefined : extra;
};
