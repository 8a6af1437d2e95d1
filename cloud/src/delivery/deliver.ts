import { generateAckToken, LIMIT_CROSSING_EVENT } from '@sortie/contracts';
import { isArmed } from '../arming/arming.ts';
import type { AppContext } from '../platform/context.ts';
import { sha256HexSync, signWebhookSync } from '../crypto/node-crypto.ts';
import type { ArmingRow, WebhookEndpointRow } from '../db/schema.ts';
import type { DeliveryOutcome } from '../platform/metrics.ts';
import { isDeliverable, liveSecrets } from '../webhooks/endpoints.ts';
import { cachedSecretOpener } from '../webhooks/secret-box.ts';
import { checkWebhookUrl } from '../net/url-guard.ts';
import { classifyStatus, nextAttemptDelay, type AttemptVerdict } from './backoff.ts';
import { COMMAND_DISPATCHED, commandDispatchedBody, deliveryId, limitCrossingBody } from './body.ts';
import { AUTO_DISABLE_AFTER_FAILURES, disableFailingEndpoint, type EndpointHealth } from './endpoint-health.ts';
import { finishJob, leaseAndLoadMany, readJobState, recordAttempts, type AttemptRecord, type LoadedJob } from './jobs.ts';
import type { InlineJob } from '../platform/outbox.ts';
import { MicroBatcher } from './micro-batcher.ts';
import { ack, nak, type JobDecision, type JobHandler } from './queue.ts';
import type { WebhookAnswer, WebhookPost } from './send.ts';

/** How long an attempt's record waits for others to share its statement (well inside any lease). */
const RECORD_LINGER_MS = 20;

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
 * addresses that passed. Two statements on the happy path: lease-and-load, then record-everything.
 * A first attempt made at dispatch (attemptInline) skips the first: the dispatch statement did it.
 */
export function createDeliveryWorker(deps: DeliveryDeps): DeliveryWorker {
  const { ctx } = deps;
  const { db, clock, logger } = ctx;
  const leaseMs = ctx.config.webhook.timeoutMs + 30_000;
  // Concurrent attempts share their two statements: under load one round trip serves many deliveries.
  const maxBatch = Math.max(1, ctx.config.delivery.concurrency);
  // Prepared statements on PostgreSQL (db/prepared.ts).
  const hot = { db, pool: ctx.database.pool };
  const loads = new MicroBatcher((items: Array<{ jobId: string; tokenHash: string }>) => leaseAndLoadMany(hot, { now: clock.now(), leaseMs, items }), {
    maxBatch,
  });
  // Records wait up to RECORD_LINGER_MS for company: nothing but the queue's ack waits on them (the
  // receiver has its POST), so at a steady 200 dispatches/s several attempts share one statement.
  const records = new MicroBatcher((items: AttemptRecord[]) => recordAttempts(hot, items), { maxBatch, lingerMs: RECORD_LINGER_MS });
  const openSecret = cachedSecretOpener();

  const stop = async (jobId: string, reason: string, postSeconds?: number): Promise<JobDecision> => {
    await finishJob(db, { jobId, state: 'abandoned', reason, now: clock.now() });
    logger.info({ jobId, reason }, 'delivery stopped');
    ctx.metrics.delivery('abandoned', postSeconds);
    return ack();
  };

  const handle: JobHandler = async (job) => {
    // A retry of an attempt made at dispatch, queued at once: its message says when it is due.
    const early = (job.notBefore ?? 0) - Date.now();
    if (early > 0) return nak(early);
    const now = clock.now();
    const ackToken = generateAckToken();
    const loaded = await loads.submit({ jobId: job.jobId, tokenHash: sha256HexSync(ackToken) });
    if (!loaded) {
      const current = await readJobState(db, job.jobId);
      // Finished, or not ours to know (another deployment's message): nothing to do, ever.
      if (!current || current.state !== 'pending') {
        ctx.metrics.delivery('skipped');
        return ack();
      }
      ctx.metrics.delivery('busy');
      return nak(BUSY_RETRY_MS);
    }

    if (loaded.job.event_type === LIMIT_CROSSING_EVENT) return attemptLimitNotification(job.jobId, loaded, now);
    const { command, endpoint, arming } = loaded;
    if (!command) return stop(job.jobId, 'command no longer exists');
    if (!endpoint || endpoint.deleted_at) return stop(job.jobId, 'endpoint deleted');
    if (!isDeliverable(endpoint)) return stop(job.jobId, 'endpoint disabled');
    if (command.status !== 'queued') return stop(job.jobId, `command is ${command.status}`);
    const deadline = command.ack_deadline_at!;
    if (deadline <= now || !loaded.tokenMinted) return stop(job.jobId, 'ack deadline passed');
    if (!arming || !isArmed(arming as ArmingRow, now)) return stop(job.jobId, 'dataset no longer armed');
    return attemptLoaded(job.jobId, { ...loaded, command, endpoint, arming }, ackToken, now);
  };

  /**
   * The first attempt of a job the dispatch statement leased and loaded (commands/dispatch.ts): every
   * check above held at that statement's instant, so it goes straight to the URL check and the POST.
   */
  const attemptInline = (job: InlineJob): Promise<JobDecision> => {
    const loaded: Attemptable = {
      job: { id: job.jobId, organization_id: job.organizationId, command_id: job.command.id, endpoint_id: job.endpoint.id, attempts: 0 },
      command: job.command,
      endpoint: job.endpoint,
      arming: { expires_at: job.armingExpiresAt, disarmed_at: null },
      tokenMinted: true,
    };
    return attemptLoaded(job.jobId, loaded, job.ackToken, clock.now());
  };

  const attemptLoaded = (jobId: string, loaded: Attemptable, ackToken: string, now: Date): Promise<JobDecision> => {
    const { command, arming } = loaded;
    return attemptSend(jobId, loaded.job, loaded.endpoint, now, {
      eventType: COMMAND_DISPATCHED,
      body: () => commandDispatchedBody({ command, ackUrl: `${ctx.config.publicUrl}/api/commands/ack`, ackToken, armingExpiresAt: arming.expires_at, sentAt: now }),
      deadline: command.ack_deadline_at!,
      pastDeadline: 'ack deadline reached before the next attempt',
      about: { commandId: command.id },
      commandDataset: command.dataset_id,
    });
  };

  /**
   * A limit notification (limits/notify.ts wrote it with the event as it was): delivered like a command,
   * to an endpoint still there, enabled and still opted in, with retries until LIMIT_NOTIFICATION_WINDOW_MS
   * after it was made (a crossing's news is stale after that; a command's deadline is its ack deadline).
   */
  const attemptLimitNotification = (jobId: string, loaded: LoadedJob, now: Date): Promise<JobDecision> => {
    const { endpoint, job } = loaded;
    if (!endpoint || endpoint.deleted_at) return stop(jobId, 'endpoint deleted');
    if (!isDeliverable(endpoint)) return stop(jobId, 'endpoint disabled');
    if (!endpoint.limit_events) return stop(jobId, 'endpoint no longer receives limit events');
    const deadline = new Date(job.created_at.getTime() + LIMIT_NOTIFICATION_WINDOW_MS);
    if (deadline <= now) return stop(jobId, 'limit notification older than its delivery window');
    return attemptSend(jobId, job, endpoint, now, {
      eventType: LIMIT_CROSSING_EVENT,
      body: () => limitCrossingBody(job.payload!, now),
      deadline,
      pastDeadline: 'delivery window of the limit notification reached before the next attempt',
      about: { eventId: String((job.payload!.event as { id?: unknown } | undefined)?.id) },
    });
  };

  /** One POST of `message` to `endpoint` (URL rules again, every live secret), recorded, and what happens next. */
  const attemptSend = async (jobId: string, loadedJob: AttemptRecord['job'], endpoint: WebhookEndpointRow, now: Date, message: Message): Promise<JobDecision> => {
    const job = { jobId }; // for the log lines and stops below, shared with the queue's path
    const deadline = message.deadline;
    const attempt = loadedJob.attempts + 1;
    const id = deliveryId(job.jobId, attempt);
    const check = await checkWebhookUrl(endpoint.url, ctx.webhookGuard);
    let answer: WebhookAnswer;
    if (!check.ok) {
      answer = { response: '', error: `refused by the URL rules: ${check.message}`, durationMs: 0 };
    } else {
      const body = JSON.stringify(message.body());
      const headers = signWebhookSync({
        secrets: liveSecrets(endpoint, ctx.secretKey, now, openSecret),
        eventType: message.eventType,
        deliveryId: id,
        rawBody: body,
        nowMs: now.getTime(),
      });
      answer = await deps.send({ url: check.url, hostname: check.hostname, addresses: check.addresses, headers, body, timeoutMs: ctx.config.webhook.timeoutMs });
    }

    const verdict: AttemptVerdict = answer.statusCode === undefined ? 'retry' : classifyStatus(answer.statusCode);
    const after = clock.now();
    let next: AttemptRecord['next'];
    let decision: JobDecision;
    if (verdict === 'success') {
      next = { state: 'delivered', reason: `receiver answered ${answer.statusCode}`, at: after };
      decision = ack();
    } else if (verdict === 'final') {
      next = { state: 'failed', reason: `receiver answered ${answer.statusCode} (final)`, at: after };
      decision = ack();
    } else {
      const delay = nextAttemptDelay({
        failedAttempts: attempt,
        schedule: ctx.config.webhook.retryScheduleMs,
        nowMs: after.getTime(),
        deadlineMs: deadline.getTime(),
        statusCode: answer.statusCode,
        retryAfter: answer.retryAfter,
        random: deps.random?.(),
      });
      if (delay === undefined) {
        next = { state: 'abandoned', reason: message.pastDeadline, at: after };
        decision = ack();
      } else {
        next = { state: 'pending', nextAttemptAt: new Date(after.getTime() + delay) };
        decision = nak(delay);
      }
    }

    const postSeconds = check.ok ? answer.durationMs / 1000 : undefined;
    const streak = await records.submit({
      job: loadedJob,
      endpointUrl: endpoint.url,
      attempt,
      deliveryId: id,
      eventType: message.eventType,
      statusCode: answer.statusCode ?? null,
      response: answer.response,
      error: answer.error ?? (verdict === 'success' ? null : describeFailure(answer)),
      durationMs: answer.durationMs,
      attemptedAt: now,
      success: verdict === 'success',
      next,
    });
    if (message.commandDataset) ctx.live.committed(message.commandDataset, 'commands');
    deps.onAttempt?.({ jobId: job.jobId, verdict, statusCode: answer.statusCode ?? 0 });
    logger.debug(
      { jobId: job.jobId, ...message.about, eventType: message.eventType, endpointId: endpoint.id, attempt, statusCode: answer.statusCode, error: answer.error, verdict },
      'delivery attempt',
    );

    if (verdict !== 'success' && !streak.disabled && streak.consecutiveFailures >= AUTO_DISABLE_AFTER_FAILURES) {
      const health = await db.transaction().execute((tx) =>
        disableFailingEndpoint(tx, { endpointId: endpoint.id, consecutiveFailures: streak.consecutiveFailures, now: after }),
      );
      if (health.disabledNow) {
        logger.warn(
          { endpointId: endpoint.id, organizationId: health.organizationId, url: health.url, reason: health.reason, notified: health.recipients.length },
          'webhook endpoint auto-disabled',
        );
        deps.onEndpointDisabled?.(health, endpoint.id);
      }
      if (next.state === 'pending') return stop(job.jobId, 'endpoint disabled', postSeconds);
    }
    ctx.metrics.delivery(attemptOutcome(check.ok, verdict, next.state), postSeconds);
    return decision;
  };

  return { handle, attemptInline };
}

/** What one attempt sends, and until when its retries may start. */
interface Message {
  eventType: string;
  /** Built only once the URL passed its check, at the attempt's instant. */
  body: () => object;
  deadline: Date;
  /** Why the job stops when the next attempt would start after `deadline`. */
  pastDeadline: string;
  /** What the log line names: the command, or the LIMIT event. */
  about: Record<string, string>;
  /** A command's dataset: its live followers see each recorded attempt (attempts, delivered_at). */
  commandDataset?: string;
}

/**
 * How long a limit notification is retried after it was made: an hour, as long as a command's longest ack
 * deadline. Past it the news is stale (the console and Follow have long shown it) and the job is abandoned.
 */
export const LIMIT_NOTIFICATION_WINDOW_MS = 3_600_000;

/** A leased job with everything its attempt reads present. */
type Attemptable = Omit<LoadedJob, 'job'> & {
  job: AttemptRecord['job'];
  command: NonNullable<LoadedJob['command']>;
  endpoint: NonNullable<LoadedJob['endpoint']>;
  arming: NonNullable<LoadedJob['arming']>;
};

/** What the engine runs: the queue's handler, and first attempts made at dispatch. */
export interface DeliveryWorker {
  handle: JobHandler;
  attemptInline(job: InlineJob): Promise<JobDecision>;
}

/** The metrics outcome of an attempt that reached the URL check (docs/operations.md). */
function attemptOutcome(sent: boolean, verdict: AttemptVerdict, next: AttemptRecord['next']['state']): DeliveryOutcome {
  if (!sent) return 'refused';
  if (verdict === 'success') return 'delivered';
  if (verdict === 'final') return 'failed';
  return next === 'abandoned' ? 'abandoned' : 'retry';
}

function describeFailure(answer: WebhookAnswer): string | null {
  if (answer.statusCode === undefined) return null;
  if (answer.statusCode >= 300 && answer.statusCode < 400) {
    return `redirect not followed${answer.location ? ` (Location: ${answer.location})` : ''}`;
  }
  return `receiver answered ${answer.statusCode}`;
}
