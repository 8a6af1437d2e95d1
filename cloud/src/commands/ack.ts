import { isAckToken, type AckRequest, type AckResponse } from '@sortie/contracts';
import { sql } from 'kysely';
import type { AppContext } from '../platform/context.ts';
import { ServiceError, conflict, notFound } from '../platform/errors.ts';
import { spendAckToken } from './ack-tokens.ts';

/** At most this many ack attempts per command in any sliding minute (spec limit). */
export const ACK_ATTEMPTS_PER_MINUTE = 10;
const WINDOW_MS = 60_000;

// One answer for every token failure, so a caller learns nothing about which part was wrong.
const BAD_TOKEN = 'unknown, expired or already used ack token for this command';

/**
 * POST /api/commands/ack. Attempts are counted in Postgres before the token is looked at, so guessing
 * is rate-limited across every cloud process. Token failures are 404, never 401.
 */
export async function acknowledge(ctx: AppContext, authorization: string | undefined, body: AckRequest): Promise<AckResponse> {
  const now = ctx.clock.now();
  await enforceRateLimit(ctx, body.commandId, now);

  const token = /^Bearer (\S+)$/.exec(authorization ?? '')?.[1];
  if (!token || !isAckToken(token)) throw notFound(BAD_TOKEN);

  let datasetId: string | undefined;
  const answer = await ctx.db.transaction().execute(async (tx) => {
    // Lock the command first so concurrent acks of one command are decided one at a time.
    const command = await tx
      .selectFrom('commands')
      .select(['id', 'dataset_id', 'status', 'acked_at', 'ack_deadline_at'])
      .where('id', '=', body.commandId)
      .forUpdate()
      .executeTakeFirst();
    if (!command) throw notFound(BAD_TOKEN);
    // The token proves itself against this row (ack-tokens.ts) and is spent here, once.
    if (!(await spendAckToken(tx, { secretKey: ctx.secretKey, token, command, now }))) throw notFound(BAD_TOKEN);

    if (command.status === 'acked' || command.status === 'nacked') {
      if (command.status !== body.state) {
        throw conflict(`command was already ${command.status}; it cannot also be ${body.state}`);
      }
      return { commandId: command.id, status: command.status, acknowledgedAt: command.acked_at!.toISOString(), duplicate: true };
    }
    if (command.status !== 'queued' || !command.ack_deadline_at || command.ack_deadline_at <= now) {
      throw notFound(BAD_TOKEN);
    }
    await tx
      .updateTable('commands')
      .set({
        status: body.state,
        acked_at: now,
        vehicle_time: body.vehicleTime ?? null,
        status_detail: body.detail,
        ack_payload: body.payload === undefined ? null : JSON.stringify(body.payload),
      })
      .where('id', '=', command.id)
      .execute();
    datasetId = command.dataset_id;
    return { commandId: command.id, status: body.state, acknowledgedAt: now.toISOString(), duplicate: false };
  });
  // After the commit: live followers of the dataset see the acknowledgement.
  if (datasetId) ctx.live.committed(datasetId, 'commands');
  return answer;
}

async function enforceRateLimit(ctx: AppContext, commandId: string, now: Date): Promise<void> {
  const windowStart = new Date(now.getTime() - WINDOW_MS);
  await ctx.db.insertInto('ack_attempts').values({ command_id: commandId, attempted_at: now }).execute();
  const { rows } = await sql<{ n: number; oldest: Date | null }>`
    select count(*)::int as n, min(attempted_at) as oldest from ack_attempts
    where command_id = ${commandId} and attempted_at > ${windowStart}
  `.execute(ctx.db);
  const { n, oldest } = rows[0]!;
  if (n > ACK_ATTEMPTS_PER_MINUTE) {
    const retryAfter = Math.max(1, Math.ceil(((oldest ? new Date(oldest).getTime() : now.getTime()) + WINDOW_MS - now.getTime()) / 1000));
    throw new ServiceError('rate_limited', `more than ${ACK_ATTEMPTS_PER_MINUTE} ack attempts for this command in a minute`, {
      retryAfterSeconds: retryAfter,
    });
  }
}
