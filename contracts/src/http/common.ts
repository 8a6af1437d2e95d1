import { z } from 'zod';

export const Uuid = z.uuid({ error: 'must be a UUID' });

/** ISO 8601 timestamp with `Z` or an offset; the service always answers in UTC with `Z`. */
export const Timestamp = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 timestamp' });

/** A timestamp as the service writes it (always UTC). */
export const TimestampOut = z.string();

export const ChannelName = z
  .string()
  .min(2, 'must be 2 to 120 characters')
  .max(120, 'must be 2 to 120 characters');
