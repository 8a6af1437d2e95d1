// The parameters panel's logic without a browser: which parameters a filter keeps, and how a value reads.
import type { FlightParameter, ParameterDiff } from '@sortie/contracts';

/** Whether `name` holds every word of the filter (case-insensitive): `att rate` finds MC_ROLLRATE_P's kin too. */
function matches(name: string, words: readonly string[]): boolean {
  const lower = name.toLowerCase();
  return words.every((w) => lower.includes(w));
}

function words(filter: string): string[] {
  return filter.toLowerCase().split(/[\s,]+/).filter(Boolean);
}

/** The parameters a filter and the changed-only toggle keep, in the order given (the service sorts by name). */
export function filterParameters(parameters: readonly FlightParameter[], filter: string, changedOnly: boolean): FlightParameter[] {
  const w = words(filter);
  return parameters.filter((p) => (!changedOnly || p.changes.length > 0) && matches(p.name, w));
}

/** A diff narrowed to the names the filter keeps (its unchanged count stays the whole diff's). */
export function filterDiff(diff: ParameterDiff, filter: string): ParameterDiff {
  const w = words(filter);
  const keep = <T extends { name: string }>(list: T[]) => list.filter((p) => matches(p.name, w));
  return { ...diff, added: keep(diff.added), removed: keep(diff.removed), changed: keep(diff.changed) };
}

/**
 * A parameter's value as a ground station shows it: an integer whole; a float32 (what autopilots keep
 * parameters in, widened to float64 on the way) as the shortest decimal that reads back as the same
 * float32, so 0.1 reads 0.1 and not 0.10000000149011612; any other number as JavaScript writes it.
 */
export function formatParameter(value: number): string {
  if (!Number.isFinite(value) || Number.isInteger(value)) return String(value);
  if (Math.fround(value) === value) {
    for (let digits = 1; digits <= 9; digits++) {
      const shorter = Number(value.toPrecision(digits));
      if (Math.fround(shorter) === value) return String(shorter);
    }
  }
  return String(value);
}
