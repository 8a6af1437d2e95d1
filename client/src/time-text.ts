import type { Timestamp } from '@bufbuild/protobuf/wkt';

// Consecutive samples mostly share their second: its text is made once.
let lastSeconds = Number.NaN;
let lastHead = '';
let lastHeadDot = '';

/**
 * "000" to "999": a fraction's digits by threes, looked up rather than formatted. A Query answer as points
 * makes one text per point (16,000 for eight channels), and String + padStart per group was the client's
 * largest single cost after reading the bytes.
 */
const DIGITS = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, '0'));
/**
 * The same with the closing "Z". A text is the second's head and its fraction joined once: a fraction
 * shorter than 13 characters (at most 10 here) is copied into one flat string, and only the join with
 * the head makes a cons string. A template literal joined the five parts one at a time: four cons
 * strings per text, alive as long as the answer holding it.
 */
const DIGITS_Z = DIGITS.map((d) => `${d}Z`);

/** A Timestamp as protobuf's JSON writes it: RFC 3339 UTC, 0, 3, 6 or 9 fractional digits. */
export function timestampText(t: Pick<Timestamp, 'seconds' | 'nanos'>): string {
  return timeText(Number(t.seconds), t.nanos);
}

/** timestampText of a time given as its seconds and nanoseconds. */
export function timeText(seconds: number, nanos: number): string {
  if (seconds !== lastSeconds) {
    lastHead = new Date(seconds * 1000).toISOString().slice(0, 19);
    lastHeadDot = `${lastHead}.`;
    lastSeconds = seconds;
  }
  if (nanos === 0) return `${lastHead}Z`;
  // Outside a Timestamp's range (protobuf-es's JSON writer refuses it): the digits as they are.
  if (!(nanos > 0 && nanos < 1_000_000_000 && Number.isInteger(nanos))) return `${lastHead}.${String(nanos).padStart(9, '0')}Z`;
  const ms = Math.floor(nanos / 1_000_000);
  const rest = nanos - ms * 1_000_000;
  if (rest === 0) return lastHeadDot + DIGITS_Z[ms];
  const us = Math.floor(rest / 1000);
  const ns = rest - us * 1000;
  if (ns === 0) return lastHeadDot + (DIGITS[ms]! + DIGITS_Z[us]!);
  return lastHeadDot + (DIGITS[ms]! + DIGITS[us]! + DIGITS_Z[ns]!);
}
