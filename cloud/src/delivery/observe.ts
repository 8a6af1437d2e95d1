import type { AppContext } from '../platform/context.ts';
import { outboxBacklog } from './jobs.ts';
import type { DeliveryQueue } from './queue.ts';

/**
 * Delivery backlog gauges (outbox in Postgres, the broker's consumer) and the NATS readiness check.
 * Here rather than in observability/ because only delivery knows its outbox and its queue; the engine
 * registers them when it is made.
 */
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
  const broker = queue.broker;
  if (broker) {
    ctx.metrics.addSource(
      'nats',
      {
        numPending: { name: 'sortie_delivery_nats_num_pending', help: 'Messages of the JetStream delivery consumer not yet handed to a worker' },
        numAckPending: { name: 'sortie_delivery_nats_num_ack_pending', help: 'Messages of the JetStream delivery consumer handed out and not yet acked' },
      },
      () => broker.consumerBacklog(),
    );
    ctx.readiness.set('nats', () => broker.ping());
  } else {
    ctx.readiness.set('nats', 'not_configured');
  }
}
