import { generateAckToken, hashAckToken } from '@sortie/contracts';
import type { Executor } from '../db/executor.ts';

/**
 * Mint a one-time ack token for a command, valid until its ack deadline. Each delivery carries its own;
 * only the hash is stored, so the token exists nowhere but in that delivery body.
 */
export async function mintAckToken(db: Executor, commandId: string, expiresAt: Date): Promise<string> {
  const token = generateAckToken();
  await db.insertInto('ack_tokens').values({ token_hash: await hashAckToken(token), command_id: commandId, expires_at: expiresAt }).execute();
  return token;
}
