import {
  AckPolicy,
  DeliverPolicy,
  JetStreamApiError,
  jetstream,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
} from '@nats-io/jetstream';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect, nanos, type NatsConnection } from '@nats-io/transport-node';
import { raceAbort } from '../platform/abort-race.ts';
import type { Logger } from '../platform/logger.ts';
import type { DeliveryQueue, JobHandler, QueueBroker, QueuedJob } from './queue.ts';

/** The names a `nats` CLI user looks for (README: "Watching deliveries"). */
export function jetStreamNames(namespace: string) {
  return {
    stream: `${namespace.toUpperCase()}_DELIVERIES`,
    subjectRoot: `${namespace}.deliveries`,
    consumer: `${namespace}-delivery-worker`,
  };
}

/** A message may sit unacked this long before JetStream hands it to another worker. */
const ACK_WAIT_MS = 60_000;
/** While a handler runs, tell JetStream it is still working this often (well inside ACK_WAIT_MS). */
const WORKING_EVERY_MS = 20_000;
/** A repeated publish of the same job id inside this window collapses onto the first (Nats-Msg-Id). */
const DUPLICATE_WINDOW_MS = 10 * 60_000;
/** A handler that throws is looked at again after this long. */
const ERROR_RETRY_MS = 5000;
/** JetStream API error code: stream not found. */
const STREAM_NOT_FOUND = 10059;
/**
 * How long one pull waits on the server for messages. Stop waits for the open pull to end, so this
 * bounds that wait; an idle process asks again this often (JetStream's minimum is 1 s).
 */
const FETCH_EXPIRES_MS = 2000;
/** A pull that failed (NATS restarting) is tried again after this long. */
const PULL_RETRY_MS = 1000;

/**
 * JetStream work-queue stream + one durable pull consumer shared by every cloud process: each message
 * goes to one worker, explicit ack, `nak(delay)` for back-off. Stream and consumer are created (or
 * brought to this configuration) at start-up, so a fresh NATS needs no setup.
 */
export class NatsDeliveryQueue implements DeliveryQueue, QueueBroker {
  readonly kind = 'jetstream';
  /** The queue is its own broker view: the engine and the metrics reach the JetStream side through it. */
  get broker(): QueueBroker {
    return this;
  }
  readonly names: ReturnType<typeof jetStreamNames>;
  /**
   * True when this start found no stream and made it: a first start, or NATS lost its storage. Either
   * way no message of any job published before exists any more (DeliveryEngine hands those to the relay).
   */
  streamCreated = false;
  readonly #nc: NatsConnection;
  readonly #js: JetStreamClient;
  readonly #jsm: JetStreamManager;
  readonly #logger: Logger;
  #loop: Promise<void> | undefined;
  readonly #inFlight = new Set<Promise<void>>();
  /** Aborted when stop() begins, to wake a loop waiting for a free slot or a retry. */
  readonly #stopped = new AbortController();
  get #stopping(): boolean {
    return this.#stopped.signal.aborted;
  }
  /** Messages the last pull delivered after stop began: handed back, never started. */
  readonly #unstarted: JsMsg[] = [];

  private constructor(nc: NatsConnection, jsm: JetStreamManager, namespace: string, logger: Logger) {
    this.#nc = nc;
    this.#js = jetstream(nc);
    this.#jsm = jsm;
    this.names = jetStreamNames(namespace);
    this.#logger = logger;
  }

  static async connect(input: { url: string; namespace: string; logger: Logger; replicas?: number }): Promise<NatsDeliveryQueue> {
    const nc = await connect({
      servers: input.url.split(',').map((s) => s.trim()),
      name: 'sortie-cloud',
      // Keep trying for ever: NATS restarting must not take the cloud down; the relay catches up after.
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      // Otherwise every request (a JetStream publish waits for its PubAck) and every acked message
      // builds two Errors up front just in case, to carry the caller's stack: 7 % of the cloud's CPU
      // when deliveries go through the queue. The queue's own errors name the operation that failed.
      noAsyncTraces: true,
    });
    try {
      const jsm = await jetstreamManager(nc);
      const queue = new NatsDeliveryQueue(nc, jsm, input.namespace, input.logger);
      await queue.#ensureStreamAndConsumer(input.replicas ?? 1);
      void queue.#watchStatus();
      return queue;
    } catch (error) {
      await nc.close();
      throw error;
    }
  }

  async #ensureStreamAndConsumer(replicas: number): Promise<void> {
    const { stream, subjectRoot, consumer } = this.names;
    const streamConfig = {
      subjects: [`${subjectRoot}.>`],
      retention: RetentionPolicy.Workqueue,
      storage: StorageType.File,
      duplicate_window: nanos(DUPLICATE_WINDOW_MS),
      // The consumer inherits it: its acks and position survive the loss of a node as the messages do.
      num_replicas: replicas,
    };
    this.streamCreated = await this.#jsm.streams.info(stream).then(
      () => false,
      (error: unknown) => {
        if (error instanceof JetStreamApiError && error.code === STREAM_NOT_FOUND) return true;
        throw error;
      },
    );
    await addOrUpdate(
      () => this.#jsm.streams.add({ name: stream, ...streamConfig }),
      () => this.#jsm.streams.update(stream, streamConfig),
    );
    const consumerConfig = {
      ack_policy: AckPolicy.Explicit,
      ack_wait: nanos(ACK_WAIT_MS),
      // Retry decisions live in Postgres (deadline, schedule); JetStream never gives up on its own.
      max_deliver: -1,
      filter_subject: `${subjectRoot}.>`,
    };
    await addOrUpdate(
      () => this.#jsm.consumers.add(stream, { durable_name: consumer, deliver_policy: DeliverPolicy.All, ...consumerConfig }),
      () => this.#jsm.consumers.update(stream, consumer, consumerConfig),
    );
  }

  async #watchStatus(): Promise<void> {
    for await (const status of this.#nc.status()) {
      if (status.type === 'disconnect') this.#logger.warn({ server: status.server }, 'NATS disconnected; reconnecting');
      else if (status.type === 'reconnect') this.#logger.info({ server: status.server }, 'NATS reconnected');
    }
  }

  async publish(jobs: readonly QueuedJob[]): Promise<void> {
    await Promise.all(
      jobs.map((job) =>
        this.#js.publish(`${this.names.subjectRoot}.${job.organizationId}`, JSON.stringify(job), {
          msgID: job.jobId,
          // Fail fast rather than wait out a NATS outage: the relay publishes what is left.
          timeout: 5000,
        }),
      ),
    );
  }

  async start(handler: JobHandler, options: { concurrency: number }): Promise<void> {
    const consumer = await this.#js.consumers.get(this.names.stream, this.names.consumer);
    // Pull only for free handler slots: every message we receive can start at once, so none waits in a
    // buffer burning its ack wait, and at stop nothing is held that another process could be running.
    this.#loop = (async () => {
      while (!this.#stopping) {
        while (this.#inFlight.size >= options.concurrency && !this.#stopping) await raceAbort(Promise.race(this.#inFlight), this.#stopped.signal, undefined);
        if (this.#stopping) break;
        try {
          const batch = await consumer.fetch({ max_messages: options.concurrency - this.#inFlight.size, expires: FETCH_EXPIRES_MS });
          // The pull stays open on the server until it is filled or expires, even after stop() begins:
          // what arrives then is kept, not started, and handed back once the pull has ended.
          for await (const msg of batch) {
            if (this.#stopping) this.#unstarted.push(msg);
            else {
              const run = this.#handle(msg, handler).finally(() => this.#inFlight.delete(run));
              this.#inFlight.add(run);
            }
          }
        } catch (err) {
          // NATS restarting or unreachable: the messages stay in the stream; pull again shortly.
          this.#logger.warn({ err }, 'JetStream pull failed; pulling again');
          await raceAbort(sleep(PULL_RETRY_MS), this.#stopped.signal, undefined);
        }
      }
    })();
  }

  async #handle(msg: JsMsg, handler: JobHandler): Promise<void> {
    let job: QueuedJob;
    try {
      job = parseJob(msg.data);
    } catch (error) {
      this.#logger.error({ err: error, subject: msg.subject }, 'unreadable delivery message; dropping it');
      msg.term('unreadable');
      return;
    }
    const keepAlive = setInterval(() => msg.working(), WORKING_EVERY_MS);
    try {
      const decision = await handler(job, { redelivered: msg.info.redelivered });
      if (decision.kind === 'ack') msg.ack();
      else if (decision.kind === 'nak') msg.nak(decision.delayMs);
      else msg.term(decision.reason);
    } catch (error) {
      this.#logger.error({ err: error, jobId: job.jobId }, 'delivery handler failed; retrying later');
      msg.nak(ERROR_RETRY_MS);
    } finally {
      clearInterval(keepAlive);
    }
  }

  /**
   * Stop pulling, let the attempts in flight finish (their acks and naks are flushed by the drain), and
   * hand back what the last pull delivered after stop began. The NAKs go out only once that pull has
   * ended: sent while a pull request of ours is still open, a NAK'd message can be handed straight back
   * into it (seen with nats-server 2.9), where nobody would start it before its ack wait ran out.
   */
  async stop(): Promise<void> {
    this.#stopped.abort();
    const inFlight = this.#inFlight.size;
    await this.#loop;
    await Promise.all(this.#inFlight);
    const handedBack = this.#unstarted.length;
    for (const msg of this.#unstarted.splice(0)) msg.nak();
    if (!this.#nc.isClosed()) await this.#nc.drain();
    this.#logger.info({ attemptsFinished: inFlight, handedBack }, 'delivery queue stopped');
  }

  async pending(): Promise<number> {
    const info = await this.#jsm.consumers.info(this.names.stream, this.names.consumer);
    return info.num_pending + info.num_ack_pending;
  }

  /** The consumer's backlog as JetStream counts it: waiting to be handed out, and handed out but unacked (metrics). */
  async consumerBacklog(): Promise<{ numPending: number; numAckPending: number }> {
    const info = await this.#jsm.consumers.info(this.names.stream, this.names.consumer);
    return { numPending: info.num_pending, numAckPending: info.num_ack_pending };
  }

  /** One round trip to the server; while disconnected it waits for the reconnect (callers bound it). */
  async ping(): Promise<void> {
    await this.#nc.flush();
  }

  /** For tests and the README's `nats` examples: remove the stream (and with it the consumer). */
  async deleteStream(): Promise<void> {
    await this.#jsm.streams.delete(this.names.stream);
  }
}

function parseJob(data: Uint8Array): QueuedJob {
  const value = JSON.parse(new TextDecoder().decode(data)) as Partial<QueuedJob>;
  if (typeof value.jobId !== 'string' || typeof value.organizationId !== 'string') throw new Error('not a delivery job');
  return { jobId: value.jobId, organizationId: value.organizationId, ...(typeof value.notBefore === 'number' && { notBefore: value.notBefore }) };
}

/** `add` is idempotent for an identical configuration; a changed one is updated in place. */
async function addOrUpdate(add: () => Promise<unknown>, update: () => Promise<unknown>): Promise<void> {
  try {
    await add();
  } catch (error) {
    // 10058: stream name in use with another configuration; 10148: consumer exists with another one.
    if (error instanceof JetStreamApiError && (error.code === 10058 || error.code === 10148)) await update();
    else throw error;
  }
}
