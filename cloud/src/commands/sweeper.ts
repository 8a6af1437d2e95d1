import { sql } from 'kysely';
import type { Db } from '../db/connect.ts';
import type { AppContext } from '../platform/context.ts';

/**
 * Move every queued command past its ack deadline to `timed_out`. One UPDATE: Postgres re-checks the
 * WHERE under the row lock, so when several cloud processes sweep at once each command moves once.
 */
export async function sweepTimedOut(ctx: AppContext, options: { pruneAckAttempts?: boolean } = {}): Promise<string[]> {
  const now = ctx.clock.now();
  const rows = await ctx.db
    .updateTable('commands')
    .set({ status: 'timed_out', status_detail: 'no acknowledgement before the ack deadline' })
    .where('status', '=', 'queued')
    .where('ack_deadline_at', '<=', now)
    .returning('id')
    .execute();
  // Attempts older than the rate-limit window no longer matter.
  if (options.pruneAckAttempts ?? true) await sql`delete from ack_attempts where attempted_at < ${new Date(now.getTime() - 120_000)}`.execute(ctx.db);
  return rows.map((r) => r.id);
}

/** Every process sweeps at least this often: for commands other processes dispatched (one may have died). */
const SAFETY_SWEEP_MS = 30_000;

/** The running sweeper of each service, by its database handle (dispatch tells it its deadlines). */
const sweepers = new WeakMap<Db, { note(deadline: Date): void }>();

/** Called by dispatch with a command's ack deadline: this process sweeps when it has passed. */
export function noteDeadline(ctx: AppContext, deadline: Date): void {
  sweepers.get(ctx.db)?.note(deadline);
}

/**
 * Sweep when a deadline this process dispatched passes (to the second: every deadline of one second
 * shares a sweep), and every SAFETY_SWEEP_MS for the rest — so an idle process costs one statement
 * every 30 s instead of two a second, and a busy one one a second at most. Errors are logged, never fatal.
 */
export function startSweeper(ctx: AppContext): { stop(): Promise<void> } {
  /** The seconds (epoch s, rounded up) holding a known deadline, ascending. */
  const due: number[] = [];
  let running: Promise<unknown> = Promise.resolve();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let timerAt = Infinity;
  let lastSafety = 0;
  let stopped = false;

  const sweep = () => {
    const now = ctx.clock.now().getTime();
    const safety = now - lastSafety >= SAFETY_SWEEP_MS;
    if (safety) lastSafety = now;
    while (due.length > 0 && due[0]! * 1000 <= now) due.shift();
    running = running
      .then(() => sweepTimedOut(ctx, { pruneAckAttempts: safety }))
      .then((ids) => {
        if (ids.length > 0) ctx.logger.info({ commandIds: ids }, 'commands timed out');
      })
      .catch((err) => ctx.logger.error({ err }, 'timeout sweep failed'));
    schedule();
  };

  const schedule = () => {
    if (stopped) return;
    const now = ctx.clock.now().getTime();
    const next = Math.min(due[0] !== undefined ? due[0] * 1000 : Infinity, lastSafety + SAFETY_SWEEP_MS);
    if (timer && timerAt <= next) return;
    clearTimeout(timer);
    timerAt = next;
    timer = setTimeout(() => {
      timer = undefined;
      timerAt = Infinity;
      sweep();
    }, Math.max(0, next - now));
    timer.unref();
  };

  sweepers.set(ctx.db, {
    note(deadline) {
      const second = Math.ceil(deadline.getTime() / 1000);
      // Binary search for its place; a second already listed is not listed twice.
      let lo = 0;
      let hi = due.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (due[mid]! < second) lo = mid + 1;
        else hi = mid;
      }
      if (due[lo] === second) return;
      due.splice(lo, 0, second);
      if (lo === 0) schedule();
    },
  });
  sweep();
  return {
    stop: async () => {
      stopped = true;
      sweepers.delete(ctx.db);
      clearTimeout(timer);
      await running;
    },
  };
}
