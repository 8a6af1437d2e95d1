import type { Timestamp } from '@bufbuild/protobuf/wkt';

// Consecutive samples mostly share their second: its text is made once.
let lastSeconds = Number.NaN;
let lastHead = '';

/** A Timestamp as protobuf's JSON writes it: RFC 3339 UTC, 0, 3, 6 or 9 fractional digits. */
export function timestampText(t: Pick<Timestamp, 'seconds' | 'nanos'>): string {
  return timeText(Number(t.seconds), t.nanos);
}

/** timestampText of a time given as its seconds and nanoseconds. */
export function timeText(seconds: number, nanos: number): string {
  if (seconds !== lastSeconds) {
    lastHead = new Date(seconds * 1000).toISOString().slice(0, 19);
    lastSeconds = seconds;
  }
  if (nanos === 0) return `${lastHead}Z`;
  if (nanos % 1_000_000 === 0) return `${lastHead}.${String(nanos / 1_000_000).padStart(3, '0')}Z`;
  if (nanos % 1000 === 0) return `${lastHead}.${String(nanos / 1000).padStart(6, '0')}Z`;
  return `${lastHead}.${String(nanos).padStart(9, '0')}Z`;
}
