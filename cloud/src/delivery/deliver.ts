import { signWebhook } from '@sortie/contracts';
import { isArmed, readArming } from '../arming/arming.ts';
import { mintAckToken } from '../commands/ack-tokens.ts';
import type { AppContext } from '../context.ts';
import type { DeliveryJobRow } from '../db/schema.ts';
import { getEndpointForDelivery, isDeliverable, liveSecrets } from '../webhooks/endpoints.ts';
import { checkWebhookUrl } from '../webhooks/url-guard.ts';
import { classifyStatus, nextAttemptDelay, type AttemptVerdict } from './backoff.ts';
import { COMMAND_DISPATCHED, commandDispatchedBody, deliveryId } from './body.ts';
import { recordEndpointOutcome, type EndpointHealth } from './endpoint-health.ts';
import { finishJob, leaseJob, readJobState, rescheduleJob } from './jobs.ts';
import { ack, nak, type JobDecision, type JobHandler } from './queue.ts';
import type { WebhookAnswer, WebhookPost } from './send.ts';

/** A job being attempted elsewhere is looked at again after this long. */
const BUSY_RETRY_MS = 5000;

export interface DeliveryDeps {
  ctx: AppContext;
  send: (post: WebhookPost) => Promise<WebhookAnswer>;
  /** Called after commit when an attempt disabled its endpoint (email, metrics). */
  onEndpointDisabled?: (health: Extract<EndpointHealth, { disabledNow: true }>, endpointId: string) => void;
  /** Called after every recorded attempt (metrics, tests). */
  onAttempt?: (attempt: { jobId: string; verdict: AttemptVerdict; statusCode: number }) => void;
  random?: () => number;
}

/**
 * One look at one delivery job. Everything is re-read from Postgres first, because the message may be
 * old: the endpoint may have been deleted or disabled, the command acked or past its deadline, the
 * dataset disarmed. Only then the URL rules run again with fresh DNS, and the POST goes to exactly the
 * addresses that passed.
 */
export function createDeliveryHandler(deps: DeliveryDeps): JobHandler {
  const { ctx } = deps;
  const { db, clock, logger } = ctx;
  const leaseMs = ctx.config.webhook.timeoutMs + 30_000;

  const stop = async (jobId: string, reason: string): Promise<JobDecision> => {
    await finishJob(db, { jobId, state: 'abandoned', reason, now: clock.now() });
    logger.info({ jobId, reason }, 'delivery stopped');
    return ack();
  };

  return async (job) => {
    const now = clock.now();
    const leased = await leaseJob(db, job.jobId, now, leaseMs);
    if (!leased) {
      const current = await readJobState(db, job.jobId);
      // Finished, or not ours to know (another deployment's message): nothing to do, ever.
      if (!current || current.state !== 'pending') return ack();
      return nak(BUSY_RETRY_MS);
    }

    const command = await db.selectFrom('commands').selectAll().where('id', '=', leased.command_id).executeTakeFirst();
    const endpoint = await getEndpointForDelivery(db, leased.endpoint_id);
    if (!command) return stop(job.jobId, 'command no longer exists');
    if (!endpoint || endpoint.deleted_at) return stop(job.jobId, 'endpoint deleted');
    if (!isDeliverable(endpoint)) return stop(job.jobId, 'endpoint disabled');
    if (command.status !== 'queued') return stop(job.jobId, `command is ${command.status}`);
    const deadline = command.ack_deadline_at!;
    if (deadline <= now) return stop(job.jobId, 'ack deadline passed');
    const arming = await readArming(db, command.dataset_id);
    if (!arming || !isArmed(arming, now)) return stop(job.jobId, 'dataset no longer armed');

    const attempt = leased.attempts + 1;
    const id = deliveryId(job.jobId, attempt);
    const check = await checkWebhookUrl(endpoint.url, ctx.webhookGuard);
    let answer: WebhookAnswer;
    if (!check.ok) {
      answer = { response: '', error: `refused by the URL rules: ${check.message}`, durationMs: 0 };
    } else {
      const ackToken = await mintAckToken(db, command.id, deadline);
      const body = JSON.stringify(
        commandDispatchedBody({ command, ackUrl: `${ctx.config.publicUrl}/api/commands/ack`, ackToken, armingExpiresAt: arming.expires_at, sentAt: now }),
      );
      const headers = await signWebhook({
        secrets: liveSecrets(endpoint, ctx.secretKey, now),
        eventType: COMMAND_DISPATCHED,
        deliveryId: id,
        rawBody: body,
        nowMs: now.getTime(),
      });
      answer = await deps.send({
        url: check.url,
        hostname: check.hostname,
        addresses: check.addresses,
        headers,
        body,
        timeoutMs: ctx.config.webhook.timeoutMs,
      });
    }

    const verdict: AttemptVerdict = answer.statusCode === undefined ? 'retry' : classifyStatus(answer.statusCode);
    const health = await recordAttempt(ctx, { job: leased, endpointUrl: endpoint.url, attempt, deliveryId: id, answer, verdict, now });
    deps.onAttempt?.({ jobId: job.jobId, verdict, statusCode: answer.statusCode ?? 0 });
    logger.info(
      { jobId: job.jobId, commandId: command.id, endpointId: endpoint.id, attempt, statusCode: answer.statusCode, error: answer.error, verdict },
      'delivery attempt',
    );
    if (health.disabledNow) {
      logger.warn(
        { endpointId: endpoint.id, organizationId: health.organizationId, url: health.url, reason: health.reason, notified: health.recipients.length },
        'webhook endpoint auto-disabled',
      );
      deps.onEndpointDisabled?.(health, endpoint.id);
    }

    const after = clock.now();
    if (verdict === 'success') {
      await finishJob(db, { jobId: job.jobId, state: 'delivered', reason: `receiver answered ${answer.statusCode}`, now: after });
      return ack();
    }
    if (verdict === 'final') {
      await finishJob(db, { jobId: job.jobId, state: 'failed', reason: `receiver answered ${answer.statusCode} (final)`, now: after });
      return ack();
    }
    if (health.disabledNow) return stop(job.jobId, 'endpoint disabled');
    const delay = nextAttemptDelay({
      failedAttempts: attempt,
      schedule: ctx.config.webhook.retryScheduleMs,
      nowMs: after.getTime(),
      deadlineMs: deadline.getTime(),
      statusCode: answer.statusCode,
      retryAfter: answer.retryAfter,
      random: deps.random?.(),
    });
    if (delay === undefined) return stop(job.jobId, 'ack deadline reached before the next attempt');
    await rescheduleJob(db, job.jobId, new Date(after.getTime() + delay));
    return nak(delay);
  };
}

/** The attempt row, the job's and the command's counters and the endpoint's streak: one transaction. */
async function recordAttempt(
  ctx: AppContext,
  input: { job: DeliveryJobRow; endpointUrl: string; attempt: number; deliveryId: string; answer: WebhookAnswer; verdict: AttemptVerdict; now: Date },
): Promise<EndpointHealth> {
  const { job, answer } = input;
  return ctx.db.transaction().execute(async (tx) => {
    await tx
      .insertInto('delivery_attempts')
      .values({
        id: crypto.randomUUID(),
        organization_id: job.organization_id,
        job_id: job.id,
        command_id: job.command_id,
        endpoint_id: job.endpoint_id,
        endpoint_url: input.endpointUrl,
        event_type: COMMAND_DISPATCHED,
        attempt: input.attempt,
        status_code: answer.statusCode ?? null,
        response: answer.response,
        error: answer.error ?? (input.verdict === 'success' ? null : describeFailure(answer)),
        duration_ms: answer.durationMs,
        attempted_at: input.now,
        delivery_id: input.deliveryId,
      })
      .execute();
    await tx.updateTable('delivery_jobs').set({ attempts: input.attempt }).where('id', '=', job.id).execute();
    await tx
      .updateTable('commands')
      .set((eb) => ({
        delivery_attempts: eb('delivery_attempts', '+', 1),
        ...(input.verdict === 'success' && { delivered_at: eb.fn.coalesce('delivered_at', eb.val(input.now)) }),
      }))
      .where('id', '=', job.command_id)
      .execute();
    return recordEndpointOutcome(tx, { endpointId: job.endpoint_id, success: input.verdict === 'success', now: input.now });
  });
}

function describeFailure(answer: WebhookAnswer): string | null {
  if (answer.statusCode === undefined) return null;
  if (answer.statusCode >= 300 && answer.statusCode < 400) {
    return `redirect not followed${answer.location ? ` (Location: ${answer.location})` : ''}`;
  }
  return `receiver answered ${answer.statusCode}`;
}
