import { MAV_TYPE, autopilotName } from '@sortie/contracts';
import type { DatasetSummary } from '@sortie/contracts';
import type { Executor } from '../db/executor.ts';
import type { DatasetRow } from '../db/schema.ts';
import { narrowSummary } from './narrow/summary.ts';
import { wideSummary } from './wide/summary.ts';
import { epochMicrosToIso } from './wide/timestamps.ts';

const TYPE_NAMES = new Map<number, string>(Object.entries(MAV_TYPE).map(([name, value]) => [value, name]));

/** A MAV_TYPE as a list shows it: `quadrotor`, `submarine`, `VTOL tiltrotor`; `type N` for one not named. */
export function vehicleTypeName(type: number): string {
  const name = TYPE_NAMES.get(type);
  if (name === undefined) return `type ${type}`;
  return name
    .split('_')
    .map((word) => (word === 'VTOL' || word === 'ADSB' || word === 'GCS' ? word : word.toLowerCase()))
    .join(' ');
}

/**
 * What a list of flights shows of a dataset beside its name (GET /api/datasets/summary): when it ran and
 * for how long (its span, as the span route reads it), how much it holds (a MAVLink flight's frames, a
 * wide dataset's numeric samples) and, for MAVLink, the vehicle its autopilot's HEARTBEAT names.
 */
export async function datasetSummary(db: Executor, dataset: DatasetRow): Promise<DatasetSummary> {
  const iso = (us: number) => epochMicrosToIso(BigInt(Math.round(us)));
  if (dataset.storage_shape === 'narrow') {
    const s = await narrowSummary(db, dataset.id);
    return {
      datasetId: dataset.id,
      first: s ? iso(s.first) : null,
      last: s ? iso(s.last) : null,
      frames: s?.frames ?? 0,
      samples: null,
      vehicle: s?.vehicle ? { mavType: s.vehicle.type, mavAutopilot: s.vehicle.autopilot, type: vehicleTypeName(s.vehicle.type), autopilot: autopilotName(s.vehicle.type, s.vehicle.autopilot) } : null,
    };
  }
  const s = dataset.table_name ? await wideSummary(db, dataset.id, dataset.table_name) : undefined;
  return { datasetId: dataset.id, first: s ? iso(s.first) : null, last: s ? iso(s.last) : null, frames: null, samples: s?.samples ?? 0, vehicle: null };
}
