import { sql } from 'kysely';
import type { AppContext } from '../platform/context.ts';

/**
 * Move every queued command past its ack deadline to `timed_out`. One UPDATE: Postgres re-checks the
 * WHERE under the row lock, so when several cloud processes sweep at once each command moves once.
 */
export async function sweepTimedOut(ctx: AppContext): Promise<string[]> {
  const now = ctx.clock.now();
  const rows = await ctx.db
    .updateTable('commands')
    .set({ status: 'timed_out', status_detail: 'no acknowledgement before the ack deadline' })
    .where('status', '=', 'queued')
    .where('ack_deadline_at', '<=', now)
    .returning('id')
    .execute();
  // Attempts older than the rate-limit window no longer matter.
  await sql`delete from ack_attempts where attempted_at < ${new Date(now.getTime() - 120_000)}`.execute(ctx.db);
  return rows.map((r) => r.id);
}

/** Sweep on an interval until stopped; errors are logged, never fatal. */
export function startSweeper(ctx: AppContext, intervalMs = 1000): { stop(): Promise<void> } {
  let running: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    running = sweepTimedOut(ctx)
      .then((ids) => {
        if (ids.length > 0) ctx.logger.info({ commandIds: ids }, 'commands timed out');
      })
      .catch((err) => ctx.logger.error({ err }, 'timeout sweep failed'));
  }, intervalMs);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await running;
    },
  };
}
