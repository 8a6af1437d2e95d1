/** `2026-11-24 21:16:05.123` in UTC: every time the console shows is UTC, labelled as such beside it. */
export function formatUtc(seconds: number): string {
  if (!Number.isFinite(seconds)) return '—';
  return new Date(seconds * 1000).toISOString().replace('T', ' ').replace('Z', '');
}

export function formatIso(text: string | null | undefined): string {
  if (!text) return '—';
  const ms = Date.parse(text);
  return Number.isFinite(ms) ? `${formatUtc(ms / 1000)} UTC` : text;
}

/** RFC 3339 with up to nanoseconds → Unix seconds, keeping the microseconds Date.parse would drop. */
export function timestampSeconds(text: string): number {
  const match = /\.(\d+)/.exec(text);
  const whole = Date.parse(text.replace(/\.\d+/, '')) / 1000;
  return match ? whole + Number(`0.${match[1]}`) : whole;
}

/** How a signal is shown: in `unit`, its stored value times `scale`, with `decimals` when the stored unit fixes the resolution. */
export interface DisplayUnit {
  unit: string;
  scale: number;
  decimals?: number;
}

// The MAVLink dialect stores many fields in units chosen to fit integers (degE7, cdeg, mm, cm/s…) or
// in SI radians; an engineer reads degrees, metres and volts. Only the display changes: storage, Query
// and exports keep the raw values in the unit the dialect names. An integer unit's step is the value's
// resolution, so it is shown to that many decimals (a latitude in degE7 to 7); a float to 6 digits.
const DEG = 180 / Math.PI;
const DISPLAY_UNITS: Record<string, DisplayUnit> = {
  rad: { unit: 'deg', scale: DEG },
  'rad/s': { unit: 'deg/s', scale: DEG },
  'mrad/s': { unit: 'deg/s', scale: DEG / 1000 },
  degE7: { unit: 'deg', scale: 1e-7, decimals: 7 },
  degE5: { unit: 'deg', scale: 1e-5, decimals: 5 },
  cdeg: { unit: 'deg', scale: 0.01, decimals: 2 },
  cdegC: { unit: 'degC', scale: 0.01, decimals: 2 },
  mm: { unit: 'm', scale: 0.001, decimals: 3 },
  cm: { unit: 'm', scale: 0.01, decimals: 2 },
  'mm/s': { unit: 'm/s', scale: 0.001, decimals: 3 },
  'cm/s': { unit: 'm/s', scale: 0.01, decimals: 2 },
  mV: { unit: 'V', scale: 0.001, decimals: 3 },
  cV: { unit: 'V', scale: 0.01, decimals: 2 },
  mA: { unit: 'A', scale: 0.001, decimals: 3 },
  cA: { unit: 'A', scale: 0.01, decimals: 2 },
};

/** The unit a channel is shown in: a standard conversion of its stored unit, else the stored unit as is. */
export function displayUnit(stored: string): DisplayUnit {
  return DISPLAY_UNITS[stored] ?? { unit: stored, scale: 1 };
}

/** A value as read off the plots: to the unit's resolution, else six significant digits (an exponent only for extreme magnitudes). */
export function formatValue(v: number, decimals?: number): string {
  if (!Number.isFinite(v)) return '—';
  if (decimals !== undefined) return v.toFixed(decimals);
  const abs = Math.abs(v);
  return abs !== 0 && (abs >= 1e12 || abs < 1e-6) ? v.toExponential(3) : String(Number(v.toPrecision(6)));
}

/** A flight's length as a test conductor says it: `9.98 s`, `3 min 27 s`, `1 h 02 min`. */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '—';
  if (seconds < 60) return `${Number(seconds.toPrecision(3))} s`;
  const whole = Math.round(seconds);
  if (whole < 3600) return `${Math.floor(whole / 60)} min ${String(whole % 60).padStart(2, '0')} s`;
  return `${Math.floor(whole / 3600)} h ${String(Math.floor((whole % 3600) / 60)).padStart(2, '0')} min`;
}
