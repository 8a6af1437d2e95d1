import type { AppContext } from '../platform/context.ts';
import { createMailer, type Mailer } from '../notifications/mailer.ts';
import { markEmailed } from '../notifications/notify-owners.ts';
import { createDeliveryWorker, type DeliveryDeps, type DeliveryWorker } from './deliver.ts';
import type { InlineJob } from '../platform/outbox.ts';
import { extendLease, loadPendingJobs, markAllPendingUnpublished, markPublished } from './jobs.ts';
import { openAttempt } from './outbox-port.ts';
import { MemoryDeliveryQueue } from './memory-queue.ts';
import { NatsDeliveryQueue } from './nats-queue.ts';
import { MicroBatcher } from './micro-batcher.ts';
import { observeDelivery } from './observe.ts';
import type { DeliveryQueue, QueuedJob } from './queue.ts';
import { DEFAULT_RELAY, startRelay, type RelayOptions } from './relay.ts';
import { postWebhook, WebhookAgents } from './send.ts';

/**
 * How long a publish mark waits for others to share its statement. Well inside the relay's grace
 * (DEFAULT_RELAY.graceMs), so the relay never republishes a job only because its mark was waiting.
 */
const MARK_LINGER_MS = 200;

export interface DeliveryEngineOverrides {
  send?: DeliveryDeps['send'];
  relay?: RelayOptions;
  onAttempt?: DeliveryDeps['onAttempt'];
}

/**
 * Dispatch → queue → worker → receiver. Owns the queue (JetStream or in-process), the worker that
 * consumes it and the relay that republishes what dispatch committed but could not publish.
 */
export class DeliveryEngine {
  readonly queue: DeliveryQueue;
  readonly #ctx: AppContext;
  readonly #deps: DeliveryDeps;
  readonly #relayOptions: RelayOptions;
  readonly #mailer: Mailer | undefined;
  readonly #agents: WebhookAgents;
  #relay: { stop(): Promise<void>; nudge(): void } | undefined;
  /**
   * Marks from many dispatches go to the database together, gathered for MARK_LINGER_MS: nobody waits on
   * a mark, and at light load the delivery's lease usually marks the job first anyway.
   */
  readonly #marks: MicroBatcher<string, undefined>;
  /** Publishes after dispatch not finished yet; stop waits for them so their marks reach the database. */
  readonly #publishing = new Set<Promise<void>>();
  readonly #worker: DeliveryWorker;
  /** Slots for first attempts made at dispatch (reserveInline), as many as the queue's worker has. */
  #inlineFree: number;
  /** First attempts made at dispatch in flight; stop waits for them to be recorded. */
  readonly #inline = new Set<Promise<void>>();
  #stopping = false;

  private constructor(
    ctx: AppContext,
    queue: DeliveryQueue,
    deps: DeliveryDeps,
    relay: RelayOptions,
    mailer: Mailer | undefined,
    agents: WebhookAgents,
  ) {
    this.#agents = agents;
    this.#marks = new MicroBatcher(async (jobIds: string[]) => {
      await markPublished(ctx.db, jobIds, ctx.clock.now());
      return jobIds.map(() => undefined);
    }, { maxBatch: 1000, lingerMs: MARK_LINGER_MS });
    this.#ctx = ctx;
    this.queue = queue;
    this.#deps = deps;
    this.#worker = createDeliveryWorker(deps);
    this.#inlineFree = ctx.config.delivery.concurrency;
    this.#relayOptions = relay;
    this.#mailer = mailer;
  }

  static async create(ctx: AppContext, overrides: DeliveryEngineOverrides = {}): Promise<DeliveryEngine> {
    const { config, logger } = ctx;
    const queue: DeliveryQueue = config.natsUrl
      ? await NatsDeliveryQueue.connect({ url: config.natsUrl, namespace: config.natsNamespace, logger, replicas: config.natsStreamReplicas })
      : new MemoryDeliveryQueue({ loadPending: () => loadPendingJobs(ctx.db, ctx.clock.now()), logger });
    if (queue.broker?.streamCreated) {
      const handedBack = await markAllPendingUnpublished(ctx.db);
      if (handedBack > 0) {
        logger.warn({ stream: queue.broker.names.stream, jobs: handedBack }, 'delivery stream was missing and is new: pending jobs go back to the relay to be published again');
      }
    }
    const mailer = config.smtp.url ? createMailer({ url: config.smtp.url, from: config.smtp.from }) : undefined;
    const agents = new WebhookAgents({ extraCa: ctx.webhookTrust.extraCa, timeoutMs: config.webhook.timeoutMs });
    // The operator may trust another CA while the server runs (npm run admin -- webhook-trust).
    ctx.webhookTrust.onChange(() => agents.trust(ctx.webhookTrust.extraCa));
    const deps: DeliveryDeps = { ctx, send: overrides.send ?? ((post) => postWebhook(post, agents)), onAttempt: overrides.onAttempt };
    const engine = new DeliveryEngine(ctx, queue, deps, overrides.relay ?? DEFAULT_RELAY, mailer, agents);
    deps.onEndpointDisabled = (health) => engine.#email(health.recipients, health.subject, health.message);
    logger.info({ queue: queue.kind, ...queue.broker?.names }, 'delivery queue ready');
    observeDelivery(ctx, queue);
    return engine;
  }

  /** The engine's sender (pinned pools, extra CA, or a test's double): a webhook test event goes out through it too. */
  get send(): DeliveryDeps['send'] {
    return this.#deps.send;
  }

  async start(): Promise<void> {
    await this.queue.start(this.#worker.handle, { concurrency: this.#ctx.config.delivery.concurrency });
    this.#relay = startRelay({ db: this.#ctx.db, queue: this.queue, clock: this.#ctx.clock, logger: this.#ctx.logger, options: this.#relayOptions });
  }

  /** Reserve slots for attempts made at dispatch (the outbox port's reserveInline); none while stopping. */
  reserveInline(wanted: number): number {
    if (this.#stopping) return 0;
    const granted = Math.max(0, Math.min(wanted, this.#inlineFree));
    this.#inlineFree -= granted;
    return granted;
  }

  releaseInline(count: number): void {
    this.#inlineFree += count;
  }

  /** After a dispatch commits: queue its jobs, and make the first attempt of those it leased here and now. */
  committed(jobs: readonly QueuedJob[], inline: readonly InlineJob[]): void {
    void this.publish(jobs);
    for (const job of inline) this.#attemptInline(job);
  }

  /**
   * One first attempt at dispatch. Its lease is short (crash recovery is that quick); an attempt still
   * running 2 s before it runs out extends it to the worker's lease. A retry is recorded (unpublished,
   * not leased: the relay's, should this process die now), then queued at once with the time it is due,
   * which the worker waits for. An attempt that throws leaves the job leased until the lease runs out,
   * and the relay hands it to the queue then.
   */
  #attemptInline(job: InlineJob): void {
    const { ctx } = this.#deps;
    const { leasedUntil } = openAttempt(job);
    const extendIn = leasedUntil.getTime() - ctx.clock.now().getTime() - 2000;
    const extend = setTimeout(() => {
      const until = new Date(ctx.clock.now().getTime() + ctx.config.webhook.timeoutMs + 30_000);
      extendLease(ctx.db, { jobId: job.jobId, from: leasedUntil, until }).catch((err) => ctx.logger.warn({ err, jobId: job.jobId }, 'could not extend a delivery lease'));
    }, Math.max(0, extendIn));
    const run: Promise<void> = this.#worker
      .attemptInline(job)
      .then((decision) => {
        if (decision.kind === 'nak') return this.publish([{ jobId: job.jobId, organizationId: job.organizationId, notBefore: Date.now() + decision.delayMs }]);
      })
      .catch((err) => ctx.logger.error({ err, jobId: job.jobId }, 'delivery attempt at dispatch failed; the job is retried once its lease runs out'))
      .finally(() => {
        clearTimeout(extend);
        this.#inlineFree += 1;
        this.#inline.delete(run);
      });
    this.#inline.add(run);
  }

  /**
   * Hand jobs to the queue. Never throws: a job that cannot be published now stays unpublished in the
   * outbox and the relay picks it up.
   */
  publish(jobs: readonly QueuedJob[]): Promise<void> {
    if (jobs.length === 0) return Promise.resolve();
    const run: Promise<void> = this.queue
      .publish(jobs.map((j) => ({ jobId: j.jobId, organizationId: j.organizationId, ...(j.notBefore !== undefined && { notBefore: j.notBefore }) })))
      .then(() => Promise.all(jobs.map((j) => this.#marks.submit(j.jobId))))
      .then(() => undefined)
      .catch((err) => {
        this.#ctx.logger.warn({ err, jobs: jobs.length }, 'publish after dispatch failed; the relay will retry');
        this.#relay?.nudge();
      })
      .finally(() => this.#publishing.delete(run));
    this.#publishing.add(run);
    return run;
  }

  /** Stop taking work: publishes and attempts in flight finish and are recorded; queued work stays queued. */
  async stop(): Promise<void> {
    this.#stopping = true;
    await this.#relay?.stop();
    this.#relay = undefined;
    // Attempts made at dispatch finish and are recorded (a retry among them is published below).
    await Promise.all(this.#inline);
    // Before the queue closes its connection: a publish cut off here would leave its job to another relay.
    await Promise.all(this.#publishing);
    await this.queue.stop();
    await this.#agents.close();
  }

  #email(recipients: { notificationId: string; email: string }[], subject: string, text: string): void {
    const mailer = this.#mailer;
    if (!mailer) return;
    for (const r of recipients.filter((r) => r.email !== '')) {
      mailer
        .send({ to: r.email, subject, text })
        .then(() => markEmailed(this.#ctx.db, r.notificationId, this.#ctx.clock.now()))
        .catch((err) => this.#ctx.logger.error({ err, notificationId: r.notificationId }, 'notification email failed'));
    }
  }
}
