import type { FlightParameter, FlightParameters, ParameterDiff } from '@sortie/contracts';
import type { Executor } from '../db/executor.ts';
import type { DatasetRow } from '../db/schema.ts';
import { readParameterValues } from '../telemetry/log-import.ts';

interface Value {
  name: string;
  value: number;
  timeUs: number | null;
  initial: boolean;
}

/**
 * A flight's parameters: what it started with and every change during it. An imported log's are stored
 * at import (flight_parameters); a MAVLink flight's are its PARAM_VALUE messages, read in frame order,
 * where the first value of a name is its initial one and a later different value a change (a ground
 * station reads the whole list at connect and the vehicle echoes every change).
 */
export async function flightParameters(db: Executor, dataset: DatasetRow): Promise<FlightParameters> {
  const stored = await db.selectFrom('flight_parameters').select(['name', 'value', 'time', 'initial']).where('dataset_id', '=', dataset.id).orderBy('seq').execute();
  if (stored.length > 0 || dataset.format === 'px4-ulog' || dataset.format === 'ardupilot-dataflash') {
    const values = stored.map((r) => ({ name: r.name, value: r.value, timeUs: r.time ? r.time.getTime() * 1000 : null, initial: r.initial }));
    return { datasetId: dataset.id, source: 'log', parameters: collect(values) };
  }
  const seen = new Set<string>();
  const values = (await readParameterValues(db, dataset.id)).map((v) => {
    const initial = !seen.has(v.name);
    seen.add(v.name);
    return { name: v.name, value: v.value, timeUs: v.timeUs, initial };
  });
  return { datasetId: dataset.id, source: 'mavlink', parameters: collect(values) };
}

/** Values in order → one entry per name: its initial value, the changes (a value equal to the one before is not one), its final value. */
function collect(values: readonly Value[]): FlightParameter[] {
  const byName = new Map<string, FlightParameter>();
  for (const v of values) {
    const known = byName.get(v.name);
    if (!known) {
      byName.set(v.name, { name: v.name, initial: v.value, changes: [], final: v.value });
      continue;
    }
    if (Object.is(known.final, v.value)) continue;
    known.changes.push({ timestamp: v.timeUs === null ? null : new Date(Math.floor(v.timeUs / 1000)).toISOString(), value: v.value });
    known.final = v.value;
  }
  return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Two flights' parameters compared at their start (`initial`) or their end (`final`). */
export function diffParameters(a: FlightParameters, b: FlightParameters, at: 'initial' | 'final'): ParameterDiff {
  const left = new Map(a.parameters.map((p) => [p.name, p[at]]));
  const right = new Map(b.parameters.map((p) => [p.name, p[at]]));
  const diff: ParameterDiff = { a: a.datasetId, b: b.datasetId, at, added: [], removed: [], changed: [], unchanged: 0 };
  for (const [name, value] of right) if (!left.has(name)) diff.added.push({ name, value });
  for (const [name, value] of left) {
    const other = right.get(name);
    if (other === undefined) diff.removed.push({ name, value });
    else if (Object.is(other, value)) diff.unchanged++;
    else diff.changed.push({ name, a: value, b: other });
  }
  const byName = (x: { name: string }, y: { name: string }) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0);
  diff.added.sort(byName);
  diff.removed.sort(byName);
  diff.changed.sort(byName);
  return diff;
}
