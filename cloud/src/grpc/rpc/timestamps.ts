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
  const seconds = Math.floor(us / 1_000_000);
  return { seconds: BigInt(seconds), nanos: Math.round(us - seconds * 1_000_000) * 1000 };
}
