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

/** ISO 8601 UTC with microseconds, the way Postgres parses it exactly. */
export function epochMicrosToIso(us: bigint): string {
  const ms = us / 1000n;
  const rest = us % 1000n;
  const base = new Date(Number(ms)).toISOString();
  return `${base.slice(0, 23)}${rest.toString().padStart(3, '0')}Z`;
}
