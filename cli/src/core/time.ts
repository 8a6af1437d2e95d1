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

const CANONICAL = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?Z$/;

/**
 * A time of a telemetry answer (RFC 3339 UTC with 0 to 9 fractional digits, as @sortie/client gives it)
 * with exactly six, the form the export's CSV uses, so columns line up and sort as text.
 */
export function formatTime(text: string | null | undefined): string {
  if (!text) return '';
  const match = CANONICAL.exec(text);
  return match ? `${match[1]}.${(match[2] ?? '').padEnd(6, '0').slice(0, 6)}Z` : text;
}

/** Microseconds since 1970 of a telemetry answer's time; NaN when it is none. */
export function timeMicros(text: string | null | undefined): number {
  const match = text ? CANONICAL.exec(text) : null;
  if (!match) return Number.NaN;
  return Date.parse(`${match[1]}Z`) * 1000 + Number((match[2] ?? '').padEnd(6, '0').slice(0, 6));
}
