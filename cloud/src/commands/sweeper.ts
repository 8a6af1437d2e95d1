import { sql } from 'kysely';
import type { Db } from '../db/connect.ts';
import { isDatabaseUnavailable } from '../db/errors.ts';
import type { AppContext } from '../platform/context.ts';
import type { Logger } from '../platform/logger.ts';
import { pruneExpiredAckTokens } from './ack-tokens.ts';

/**
 * Move every queued command past its ack deadline to `timed_out`. One UPDATE: Postgres re-checks the
 * WHERE under the row lock, so when several cloud processes sweep at once each command moves once.
 * With `prune` (the default; the safety sweep every SAFETY_SWEEP_MS) it also deletes the ack rows that
 * no longer decide anything: attempts older than the rate-limit window, tokens well past their deadline.
 */
export async function sweepTimedOut(ctx: AppContext, options: { prune?: boolean } = {}): Promise<string[]> {
  const now = ctx.clock.now();
  const rows = await ctx.db
    .updateTable('commands')
    .set({ status: 'timed_out', status_detail: 'no acknowledgement before the ack deadline' })
    .where('status', '=', 'queued')
    .where('ack_deadline_at', '<=', now)
    .returning(['id', 'dataset_id'])
    .execute();
  for (const datasetId of new Set(rows.map((r) => r.dataset_id))) ctx.live.committed(datasetId, 'commands');
  if (options.prune ?? true) {
    // Attempts older than the rate-limit window no longer matter.
    await sql`delete from ack_attempts where attempted_at < ${new Date(now.getTime() - 120_000)}`.execute(ctx.db);
    await pruneExpiredAckTokens(ctx.db, now);
  }
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
 * How sweep outcomes reach the log. While PostgreSQL is unreachable every sweep fails the same way;
 * an error line per tick would bury the one line that matters and page on-call for an outage the
 * readiness probe and the API's 503s already report. So the first unreachable failure logs one warn,
 * the first success after it one info (with how long it lasted), and the ticks between stay quiet.
 * Any other failure (a bad statement, a permission) is a bug and logs at error level every time; it
 * neither starts nor ends an outage, since only a completed sweep shows the sweeper works again.
 */
export function sweepOutcomeLog(logger: Logger, clock: { now(): Date }) {
  let outage: { sinceMs: number; failedSweeps: number } | undefined;
  return {
    succeeded(ids: string[]): void {
      if (outage) {
        logger.info({ outageMs: clock.now().getTime() - outage.sinceMs, failedSweeps: outage.failedSweeps }, 'timeout sweep recovered: database reachable again');
        outage = undefined;
      }
      if (ids.length > 0) logger.info({ commandIds: ids }, 'commands timed out');
    },
    failed(err: unknown): void {
      if (!isDatabaseUnavailable(err)) {
        logger.error({ err }, 'timeout sweep failed');
        return;
      }
      if (outage) {
        outage.failedSweeps++;
        return;
      }
      outage = { sinceMs: clock.now().getTime(), failedSweeps: 1 };
      logger.warn({ err }, 'timeout sweep paused: database unreachable (logged once until it recovers)');
    },
  };
}

/**
 * Sweep when a deadline this process dispatched passes (to the second: every deadline of one second
 * shares a sweep), and every SAFETY_SWEEP_MS for the rest — so an idle process costs one statement
 * every 30 s instead of two a second, and a busy one one a second at most. Errors are logged (see
 * sweepOutcomeLog), never fatal. `sweepOnce` is replaceable so tests can drive failures without an outage.
 */
export function startSweeper(ctx: AppContext, sweepOnce: typeof sweepTimedOut = sweepTimedOut): { stop(): Promise<void> } {
  const outcomes = sweepOutcomeLog(ctx.logger, ctx.clock);
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
      .then(() => sweepOnce(ctx, { prune: safety }))
      .then((ids) => outcomes.succeeded(ids))
      .catch((err: unknown) => outcomes.failed(err));
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
