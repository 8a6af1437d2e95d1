import { sql } from 'kysely';
import type { AppContext } from '../platform/context.ts';
import type { DatabaseHandle } from '../db/connect.ts';
import { outboxBacklog } from '../delivery/jobs.ts';
import { NatsDeliveryQueue } from '../delivery/nats-queue.ts';
import type { DeliveryQueue } from '../delivery/queue.ts';
import type { Logger } from '../platform/logger.ts';
import { Metrics } from '../platform/metrics.ts';
import { Readiness } from '../platform/readiness.ts';

/** A service's metrics and readiness, made before anything that reports to them. */
export function createObservability(database: DatabaseHandle, logger: Logger): { metrics: Metrics; readiness: Readiness } {
  const metrics = new Metrics({ logger });
  const readiness = new Readiness(logger);
  readiness.set('database', () => sql`select 1`.execute(database.db));
  return { metrics, readiness };
}

/** Delivery backlog gauges (outbox in Postgres, JetStream consumer) and the NATS readiness check. */
export function observeDelivery(ctx: AppContext, queue: DeliveryQueue): void {
  ctx.metrics.addSource(
    'database',
    {
      pending: { name: 'sortie_delivery_jobs_pending', help: 'Delivery jobs in the outbox not finished yet (state pending)' },
      lag: {
        name: 'sortie_delivery_queue_lag_seconds',
        help: 'How long the oldest delivery job that is due and not being attempted has waited for a worker (0 when none)',
      },
    },
    async () => {
      const backlog = await outboxBacklog(ctx.db);
      return { pending: backlog.pending, lag: backlog.lagSeconds };
    },
  );
  if (queue instanceof NatsDeliveryQueue) {
    ctx.metrics.addSource(
      'nats',
      {
        numPending: { name: 'sortie_delivery_nats_num_pending', help: 'Messages of the JetStream delivery consumer not yet handed to a worker' },
        numAckPending: { name: 'sortie_delivery_nats_num_ack_pending', help: 'Messages of the JetStream delivery consumer handed out and not yet acked' },
      },
      () => queue.consumerBacklog(),
    );
    ctx.readiness.set('nats', () => queue.ping());
  } else {
    ctx.readiness.set('nats', 'not_configured');
  }
}
