// GPS track in local metres: an equirectangular projection around the first fix. No map tiles (a test
// range is often offline); over a flight's few kilometres the error is far below a GPS fix's.

const EARTH_RADIUS_M = 6_371_008.8;

export interface LocalTrack {
  /** East of the origin, metres. */
  x: Float64Array;
  /** North of the origin, metres. */
  y: Float64Array;
  times: Float64Array;
}

/**
 * `lat`/`lon` sampled at `times`, `unitsPerDegree` to a degree: 1e7 as GLOBAL_POSITION_INT and older PX4
 * logs carry them (degrees × 1e7), 1 for a log's float degrees. A (0, 0) fix is the autopilot's "no
 * position" and is skipped; so are non-finite samples.
 */
export function localTrack(times: ArrayLike<number>, latUnits: ArrayLike<number>, lonUnits: ArrayLike<number>, unitsPerDegree = 1e7): LocalTrack {
  const n = Math.min(times.length, latUnits.length, lonUnits.length);
  const xs: number[] = [];
  const ys: number[] = [];
  const ts: number[] = [];
  let lat0 = NaN;
  let lon0 = NaN;
  let cosLat0 = 1;
  for (let i = 0; i < n; i++) {
    const lat = latUnits[i]! / unitsPerDegree;
    const lon = lonUnits[i]! / unitsPerDegree;
    if (!Number.isFinite(lat) || !Number.isFinite(lon) || (lat === 0 && lon === 0) || Math.abs(lat) > 90 || Math.abs(lon) > 180) continue;
    if (Number.isNaN(lat0)) {
      lat0 = lat;
      lon0 = lon;
      cosLat0 = Math.cos((lat0 * Math.PI) / 180);
    }
    xs.push(((lon - lon0) * Math.PI * EARTH_RADIUS_M * cosLat0) / 180);
    ys.push(((lat - lat0) * Math.PI * EARTH_RADIUS_M) / 180);
    ts.push(times[i]!);
  }
  return { x: Float64Array.from(xs), y: Float64Array.from(ys), times: Float64Array.from(ts) };
}

/** Index of the last sample at or before `t` (binary search), or -1. */
export function indexAtOrBefore(times: ArrayLike<number>, t: number): number {
  let lo = 0;
  let hi = times.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (times[mid]! <= t) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

/**
 * The length of a map scale bar, in metres: the largest 1, 2 or 5 × 10^n not above `maxMetres`, so the
 * bar reads as a round number (a track 460 m across with a bar of at most a quarter of it gets 100 m).
 */
export function scaleBarMetres(maxMetres: number): number {
  if (!(maxMetres > 0)) return 0;
  const decade = 10 ** Math.floor(Math.log10(maxMetres));
  for (const step of [5, 2, 1]) if (step * decade <= maxMetres) return step * decade;
  return decade;
}

/** Where a point lies from the first fix, as a crew says it: `80 m east, 151 m south`, never `-151 m north`. */
export function offsetText(east: number, north: number): string {
  const part = (metres: number, positive: string, negative: string) => `${Math.abs(metres).toFixed(0)} m ${metres < 0 && Math.abs(metres) >= 0.5 ? negative : positive}`;
  return `${part(east, 'east', 'west')}, ${part(north, 'north', 'south')}`;
}
