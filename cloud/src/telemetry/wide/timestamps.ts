/**
 * Microseconds since the Unix epoch for an ISO 8601 timestamp, keeping the digits past the
 * millisecond that Date drops (Postgres timestamptz keeps microseconds).
 */
export function isoToEpochMicros(iso: string): bigint {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) throw new RangeError(`not a timestamp: ${iso}`);
  const fraction = /\.(\d+)/.exec(iso)?.[1] ?? '';
  const subMs = Number((fraction.slice(3, 6) + '000').slice(0, 3));
  return BigInt(ms) * 1000n + BigInt(subMs);
}

/**
 * isoToEpochMicros as a double, for the append hot path: no regex match, no BigInt. Exact for the
 * contract's Timestamp range (its microseconds stay below 2^53); timestamps.test.ts holds it equal to the
 * BigInt version.
 */
export function isoToEpochMicrosNumber(iso: string): number {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) throw new RangeError(`not a timestamp: ${iso}`);
  // The 4th to 6th fraction digits (those Date drops), missing ones read as 0, as isoToEpochMicros does.
  const dot = iso.indexOf('.');
  let subMs = 0;
  if (dot >= 0) {
    let weight = 100;
    for (let k = dot + 4; k <= dot + 6; k++) {
      const d = iso.charCodeAt(k) - 48;
      if (!(d >= 0 && d <= 9) || !allDigits(iso, dot + 1, k)) break;
      subMs += d * weight;
      weight /= 10;
    }
  }
  return ms * 1000 + subMs;
}

/** Whether iso[from, to) are all decimal digits. */
function allDigits(iso: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const d = iso.charCodeAt(i) - 48;
    if (!(d >= 0 && d <= 9)) return false;
  }
  return true;
}

/** ISO 8601 UTC with microseconds, the way Postgres parses it exactly. */
export function epochMicrosToIso(us: bigint): string {
  const ms = us / 1000n;
  const rest = us % 1000n;
  const base = new Date(Number(ms)).toISOString();
  return `${base.slice(0, 23)}${rest.toString().padStart(3, '0')}Z`;
}
