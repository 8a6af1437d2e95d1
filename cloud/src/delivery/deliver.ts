import { LIMIT_CROSSING_EVENT } from '@sortie/contracts';
import { isArmed } from '../arming/arming.ts';
import { mintAckToken } from '../commands/ack-tokens.ts';
import type { AppContext } from '../platform/context.ts';
import { signWebhookSync } from '../crypto/node-crypto.ts';
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
import { openAttempt } from './outbox-port.ts';
import { ack, nak, type JobDecision, type JobHandler, type QueuedJob } from './queue.ts';
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
 *
 * The steps, each a function below: claim (lease and load), check (is it still to be sent), send (URL
 * rules, sign, POST), next (delivered, failed, or when to retry), record (the attempt, the job, the
 * counters, in one shared statement), and the endpoint's health (auto-disable after a failure streak).
 */
export function createDeliveryWorker(deps: DeliveryDeps): DeliveryWorker {
  const { ctx } = deps;
  const leaseMs = ctx.config.webhook.timeoutMs + 30_000;
  // Concurrent attempts share their two statements: under load one round trip serves many deliveries.
  const maxBatch = Math.max(1, ctx.config.delivery.concurrency);
  // Prepared statements on PostgreSQL (db/prepared.ts).
  const hot = { db: ctx.db, pool: ctx.database.pool };
  const worker: Worker = {
    deps,
    loads: new MicroBatcher((jobIds: string[]) => leaseAndLoadMany(hot, { now: ctx.clock.now(), leaseMs, jobIds }), { maxBatch }),
    // Records wait up to RECORD_LINGER_MS for company: nothing but the queue's ack waits on them (the
    // receiver has its POST), so at a steady 200 dispatches/s several attempts share one statement.
    records: new MicroBatcher((items: AttemptRecord[]) => recordAttempts(hot, items), { maxBatch, lingerMs: RECORD_LINGER_MS }),
    openSecret: cachedSecretOpener(),
  };
  return { handle: (job) => handleJob(worker, job), attemptInline: (job) => attemptInline(worker, job) };
}

/** What the steps of one worker share: its dependencies and the batchers of its two statements. */
interface Worker {
  deps: DeliveryDeps;
  loads: MicroBatcher<string, LoadedJob | undefined>;
  records: MicroBatcher<AttemptRecord, { consecutiveFailures: number; disabled: boolean }>;
  openSecret: ReturnType<typeof cachedSecretOpener>;
}

/** The queue's handler: claim the job, check it is still to be sent, and attempt it. */
async function handleJob(w: Worker, job: QueuedJob): Promise<JobDecision> {
  // A retry of an attempt made at dispatch, queued at once: its message says when it is due.
  const early = (job.notBefore ?? 0) - Date.now();
  if (early > 0) return nak(early);
  const now = w.deps.ctx.clock.now();
  const claimed = await claim(w, job.jobId);
  if (!isLoaded(claimed)) return claimed;
  if (claimed.job.event_type === LIMIT_CROSSING_EVENT) return attemptLimitNotification(w, job.jobId, claimed, now);
  const stopped = whyNotSendCommand(claimed, now);
  if (typeof stopped === 'string') return stop(w, job.jobId, stopped);
  // The token proves itself (commands/ack-tokens.ts): nothing is stored for it.
  const ackToken = mintAckToken(w.deps.ctx.secretKey, stopped.command.id, stopped.command.ack_deadline_at!);
  return attemptCommand(w, job.jobId, stopped, ackToken, now);
}

/**
 * Claim: lease the job and read what its attempt needs (one statement, shared by concurrent claims). A
 * job not leased is finished (ack) or being attempted elsewhere (look again after BUSY_RETRY_MS).
 */
async function claim(w: Worker, jobId: string): Promise<LoadedJob | JobDecision> {
  const { ctx } = w.deps;
  const loaded = await w.loads.submit(jobId);
  if (loaded) return loaded;
  const current = await readJobState(ctx.db, jobId);
  // Finished, or not ours to know (another deployment's message): nothing to do, ever.
  if (!current || current.state !== 'pending') {
    ctx.metrics.delivery('skipped');
    return ack();
  }
  ctx.metrics.delivery('busy');
  return nak(BUSY_RETRY_MS);
}

function isLoaded(claimed: LoadedJob | JobDecision): claimed is LoadedJob {
  return 'job' in claimed;
}

/** Check: why a command's job is no longer to be sent (the reason it stops with), or the job with everything its attempt reads. */
function whyNotSendCommand(loaded: LoadedJob, now: Date): string | Attemptable {
  const { command, endpoint, arming } = loaded;
  if (!command) return 'command no longer exists';
  if (!endpoint || endpoint.deleted_at) return 'endpoint deleted';
  if (!isDeliverable(endpoint)) return 'endpoint disabled';
  if (command.status !== 'queued') return `command is ${command.status}`;
  const deadline = command.ack_deadline_at!;
  if (deadline <= now) return 'ack deadline passed';
  if (!arming || !isArmed(arming as ArmingRow, now)) return 'dataset no longer armed';
  return { ...loaded, command, endpoint, arming };
}

/** Close a job that is not to be sent (abandoned, with why). */
async function stop(w: Worker, jobId: string, reason: string, postSeconds?: number): Promise<JobDecision> {
  const { ctx } = w.deps;
  await finishJob(ctx.db, { jobId, state: 'abandoned', reason, now: ctx.clock.now() });
  ctx.logger.info({ jobId, reason }, 'delivery stopped');
  ctx.metrics.delivery('abandoned', postSeconds);
  return ack();
}

/**
 * The first attempt of a job the dispatch statement leased and loaded (delivery's part of it,
 * outbox-port.ts): every check above held at that statement's instant, so it goes straight to the URL
 * check and the POST.
 */
function attemptInline(w: Worker, job: InlineJob): Promise<JobDecision> {
  const { ackToken, command, endpoint, armingExpiresAt } = openAttempt(job);
  const loaded: Attemptable = {
    job: { id: job.jobId, organization_id: job.organizationId, command_id: command.id, endpoint_id: endpoint.id, attempts: 0 },
    command,
    endpoint,
    arming: { expires_at: armingExpiresAt, disarmed_at: null },
  };
  return attemptCommand(w, job.jobId, loaded, ackToken, w.deps.ctx.clock.now());
}

/** A command's attempt: its `command.dispatched` body, retried until its ack deadline. */
function attemptCommand(w: Worker, jobId: string, loaded: Attemptable, ackToken: string, now: Date): Promise<JobDecision> {
  const { command, arming } = loaded;
  const { ctx } = w.deps;
  return attemptSend(w, jobId, loaded.job, loaded.endpoint, now, {
    eventType: COMMAND_DISPATCHED,
    body: () => commandDispatchedBody({ command, ackUrl: `${ctx.config.publicUrl}/api/commands/ack`, ackToken, armingExpiresAt: arming.expires_at, sentAt: now }),
    deadline: command.ack_deadline_at!,
    pastDeadline: 'ack deadline reached before the next attempt',
    about: { commandId: command.id },
    commandDataset: command.dataset_id,
  });
}

/**
 * A limit notification (limits/notify.ts made it with the event as it was): delivered like a command,
 * to an endpoint still there, enabled and still opted in, with retries until LIMIT_NOTIFICATION_WINDOW_MS
 * after it was made (a crossing's news is stale after that; a command's deadline is its ack deadline).
 */
function attemptLimitNotification(w: Worker, jobId: string, loaded: LoadedJob, now: Date): Promise<JobDecision> {
  const { endpoint, job } = loaded;
  if (!endpoint || endpoint.deleted_at) return stop(w, jobId, 'endpoint deleted');
  if (!isDeliverable(endpoint)) return stop(w, jobId, 'endpoint disabled');
  if (!endpoint.limit_events) return stop(w, jobId, 'endpoint no longer receives limit events');
  const deadline = new Date(job.created_at.getTime() + LIMIT_NOTIFICATION_WINDOW_MS);
  if (deadline <= now) return stop(w, jobId, 'limit notification older than its delivery window');
  return attemptSend(w, jobId, job, endpoint, now, {
    eventType: LIMIT_CROSSING_EVENT,
    body: () => limitCrossingBody(job.payload!, now),
    deadline,
    pastDeadline: 'delivery window of the limit notification reached before the next attempt',
    about: { eventId: String((job.payload!.event as { id?: unknown } | undefined)?.id) },
  });
}

/** One POST of `message` to `endpoint`, recorded, and what happens next: send, next, record, the endpoint's health. */
async function attemptSend(w: Worker, jobId: string, loadedJob: AttemptRecord['job'], endpoint: WebhookEndpointRow, now: Date, message: Message): Promise<JobDecision> {
  const { ctx } = w.deps;
  const attempt = loadedJob.attempts + 1;
  const id = deliveryId(jobId, attempt);
  const { sent, answer } = await send(w, endpoint, message, id, now);
  const verdict: AttemptVerdict = answer.statusCode === undefined ? 'retry' : classifyStatus(answer.statusCode);
  const after = ctx.clock.now();
  const { next, decision } = nextStep(w, { verdict, answer, attempt, deadline: message.deadline, pastDeadline: message.pastDeadline, after });
  const postSeconds = sent ? answer.durationMs / 1000 : undefined;
  const streak = await record(w, { jobId, loadedJob, endpoint, attempt, id, message, answer, verdict, now, next });
  if (verdict !== 'success' && !streak.disabled && streak.consecutiveFailures >= AUTO_DISABLE_AFTER_FAILURES) {
    await disableEndpoint(w, endpoint.id, streak.consecutiveFailures, after);
    if (next.state === 'pending') return stop(w, jobId, 'endpoint disabled', postSeconds);
  }
  ctx.metrics.delivery(attemptOutcome(sent, verdict, next.state), postSeconds);
  return decision;
}

/** Send: the URL rules again with fresh DNS, then the signed POST (every live secret) to the addresses that passed. */
async function send(w: Worker, endpoint: WebhookEndpointRow, message: Message, id: string, now: Date): Promise<{ sent: boolean; answer: WebhookAnswer }> {
  const { ctx } = w.deps;
  const check = await checkWebhookUrl(endpoint.url, ctx.webhookGuard);
  if (!check.ok) return { sent: false, answer: { response: '', error: `refused by the URL rules: ${check.message}`, durationMs: 0 } };
  const body = JSON.stringify(message.body());
  const headers = signWebhookSync({
    secrets: liveSecrets(endpoint, ctx.secretKey, now, w.openSecret),
    eventType: message.eventType,
    deliveryId: id,
    rawBody: body,
    nowMs: now.getTime(),
  });
  const answer = await w.deps.send({ url: check.url, hostname: check.hostname, addresses: check.addresses, headers, body, timeoutMs: ctx.config.webhook.timeoutMs });
  return { sent: true, answer };
}

/** Next: delivered, failed for good, abandoned past the deadline, or pending until the backoff's next attempt. */
function nextStep(
  w: Worker,
  input: { verdict: AttemptVerdict; answer: WebhookAnswer; attempt: number; deadline: Date; pastDeadline: string; after: Date },
): { next: AttemptRecord['next']; decision: JobDecision } {
  const { verdict, answer, after } = input;
  if (verdict === 'success') return { next: { state: 'delivered', reason: `receiver answered ${answer.statusCode}`, at: after }, decision: ack() };
  if (verdict === 'final') return { next: { state: 'failed', reason: `receiver answered ${answer.statusCode} (final)`, at: after }, decision: ack() };
  const delay = nextAttemptDelay({
    failedAttempts: input.attempt,
    schedule: w.deps.ctx.config.webhook.retryScheduleMs,
    nowMs: after.getTime(),
    deadlineMs: input.deadline.getTime(),
    statusCode: answer.statusCode,
    retryAfter: answer.retryAfter,
    random: w.deps.random?.(),
  });
  if (delay === undefined) return { next: { state: 'abandoned', reason: input.pastDeadline, at: after }, decision: ack() };
  return { next: { state: 'pending', nextAttemptAt: new Date(after.getTime() + delay) }, decision: nak(delay) };
}

/**
 * Record: the attempt, the job's next state, the command's counters and the endpoint's streak, in the
 * statement the batch shares (jobs.ts recordAttempts); then the live followers, onAttempt and the log.
 * The endpoint's streak afterwards.
 */
async function record(
  w: Worker,
  a: {
    jobId: string;
    loadedJob: AttemptRecord['job'];
    endpoint: WebhookEndpointRow;
    attempt: number;
    id: string;
    message: Message;
    answer: WebhookAnswer;
    verdict: AttemptVerdict;
    now: Date;
    next: AttemptRecord['next'];
  },
): Promise<{ consecutiveFailures: number; disabled: boolean }> {
  const { ctx } = w.deps;
  const { answer, verdict, message } = a;
  const streak = await w.records.submit({
    job: a.loadedJob,
    endpointUrl: a.endpoint.url,
    attempt: a.attempt,
    deliveryId: a.id,
    eventType: message.eventType,
    statusCode: answer.statusCode ?? null,
    response: answer.response,
    error: answer.error ?? (verdict === 'success' ? null : describeFailure(answer)),
    durationMs: answer.durationMs,
    attemptedAt: a.now,
    success: verdict === 'success',
    next: a.next,
  });
  if (message.commandDataset) ctx.live.committed(message.commandDataset, 'commands');
  w.deps.onAttempt?.({ jobId: a.jobId, verdict, statusCode: answer.statusCode ?? 0 });
  ctx.logger.debug(
    { jobId: a.jobId, ...message.about, eventType: message.eventType, endpointId: a.endpoint.id, attempt: a.attempt, statusCode: answer.statusCode, error: answer.error, verdict },
    'delivery attempt',
  );
  return streak;
}

/** The endpoint's health: disable it after AUTO_DISABLE_AFTER_FAILURES failures in a row, and tell its owners. */
async function disableEndpoint(w: Worker, endpointId: string, consecutiveFailures: number, now: Date): Promise<void> {
  const { ctx } = w.deps;
  const health = await ctx.db.transaction().execute((tx) => disableFailingEndpoint(tx, { endpointId, consecutiveFailures, now }));
  if (health.disabledNow) {
    ctx.logger.warn(
      { endpointId, organizationId: health.organizationId, url: health.url, reason: health.reason, notified: health.recipients.length },
      'webhook endpoint auto-disabled',
    );
    w.deps.onEndpointDisabled?.(health, endpointId);
  }
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
