import { CliError } from './exit-codes.ts';

/** A protobuf Timestamp's parts. */
export interface TimestampParts {
  seconds: bigint;
  nanos: number;
}

const RFC3339 = /^(\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * An RFC 3339 time as a Timestamp, to the nanosecond (Date alone would cut at the millisecond, and
 * telemetry is often finer). A time that is not RFC 3339 is a usage error naming the flag.
 */
export function parseTime(text: string, flag: string): TimestampParts {
  const match = RFC3339.exec(text.trim());
  const ms = match ? Date.parse(`${match[1]!.replace(/[t ]/, 'T')}${match[3]!.toUpperCase()}`) : Number.NaN;
  if (!match || Number.isNaN(ms)) throw new CliError(`--${flag} must be an RFC 3339 time such as 2026-01-02T03:04:05.123Z, not "${text}"`);
  return { seconds: BigInt(ms / 1000), nanos: Number((match[2] ?? '').padEnd(9, '0')) };
}

/** A Timestamp as RFC 3339 UTC with microseconds, the form the export's CSV uses. */
export function formatTime(ts: { seconds: bigint; nanos: number } | undefined): string {
  if (!ts) return '';
  const whole = new Date(Number(ts.seconds) * 1000).toISOString().slice(0, 19);
  return `${whole}.${String(Math.floor(ts.nanos / 1000)).padStart(6, '0')}Z`;
}
