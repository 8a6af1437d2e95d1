import { z } from 'zod';
import { SCOPES } from '../core/scopes.ts';
import { TimestampOut, Uuid, text } from './common.ts';

/**
 * GET /console/session: who the presented key is, for the console's header and for disabling the
 * controls the key has no scope for. Any valid key may ask; it tells the key's holder only what the
 * key already is.
 */
export const ConsoleSessionSchema = z.object({
  organization: z.object({ id: Uuid, name: text() }),
  keyId: Uuid,
  scopes: z.array(z.enum(SCOPES)),
  expiresAt: TimestampOut.nullable(),
});
export type ConsoleSession = z.infer<typeof ConsoleSessionSchema>;
