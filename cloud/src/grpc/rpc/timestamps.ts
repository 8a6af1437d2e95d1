import type { MessageInitShape } from '@bufbuild/protobuf';
import type { Timestamp, TimestampSchema } from '@bufbuild/protobuf/wkt';
import { ServiceError } from '../../platform/errors.ts';

/** A request's Timestamp as µs since the epoch; one outside what a µs number holds exactly is the caller's error. */
export function timestampMicros(ts: Timestamp, field: string): number {
  const seconds = Number(ts.seconds);
  if (!Number.isSafeInteger(seconds * 1_000_000) || ts.nanos < 0 || ts.nanos > 999_999_999) {
    throw new ServiceError('invalid_request', `${field} is not a valid timestamp in the supported range`);
  }
  return seconds * 1_000_000 + Math.floor(ts.nanos / 1000);
}

/** µs since the epoch as a response's Timestamp. */
export function microsToTimestamp(us: number): MessageInitShape<typeof TimestampSchema> {
  const seconds = secondsOfMicros(us);
  return { seconds: BigInt(seconds), nanos: nanosOfMicros(us, seconds) };
}

/** A Timestamp's seconds for µs since the epoch (floored: a time before 1970 has nanos ≥ 0). */
export function secondsOfMicros(us: number): number {
  return Math.floor(us / 1_000_000);
}

/** A Timestamp's nanos for µs since the epoch, given its `secondsOfMicros`. */
export function nanosOfMicros(us: number, seconds: number): number {
  return Math.round(us - seconds * 1_000_000) * 1000;
}
