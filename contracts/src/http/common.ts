import { z } from 'zod';

export const Uuid = z.uuid({ error: 'must be a UUID' });

const UUID_SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Whether `value` has the shape of a UUID: 8-4-4-4-12 hex digits, either case. Looser than `Uuid`,
 * which also checks the RFC 9562 version and variant digits: this is the test for places that sort
 * ids from other strings (a gRPC id field, an admin CLI flag, a channel UUID used as a value key)
 * and must keep taking ids any UUID generator produced. One copy, so those places cannot drift apart.
 */
export function isUuid(value: string): boolean {
  return UUID_SHAPE.test(value);
}

/** ISO 8601 timestamp with `Z` or an offset; the service always answers in UTC with `Z`. */
export const Timestamp = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 timestamp' });

/** A timestamp as the service writes it (always UTC). */
export const TimestampOut = z.string();

export const ChannelName = z
  .string()
  .min(2, 'must be 2 to 120 characters')
  .max(120, 'must be 2 to 120 characters');
