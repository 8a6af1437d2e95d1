import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Logger } from './logger.ts';

/**
 * The service's Prometheus series (docs/operations.md lists them). One Metrics per service instance with
 * its own Registry: tests run several services in one process, and the global default registry would mix
 * them. Counters are incremented once per request, batch or attempt, never per point.
 */

/** What one look at a delivery job came to (deliver.ts). */
export const DELIVERY_OUTCOMES = ['delivered', 'retry', 'failed', 'abandoned', 'refused', 'busy', 'skipped'] as const;
export type DeliveryOutcome = (typeof DELIVERY_OUTCOMES)[number];

/** How a POST /api/commands/ack ended. */
export const ACK_OUTCOMES = ['acked', 'nacked', 'duplicate', 'conflict', 'rejected', 'rate_limited', 'invalid', 'error'] as const;
export type AckOutcome = (typeof ACK_OUTCOMES)[number];

export type IngestTransport = 'grpc' | 'http';
export type IngestShape = 'wide' | 'narrow';
export interface IngestCounts {
  written: number;
  duplicates: number;
  ignored: number;
}

/** Gauges read at scrape time from something that may be down (Postgres, NATS). */
interface ScrapeSource {
  gauges: Map<string, Gauge>;
  read: () => Promise<Record<string, number>>;
}

const HTTP_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
/** A source slower than this is reported down, so a hung dependency never hangs the scrape. */
const SOURCE_TIMEOUT_MS = 2000;

export class Metrics {
  readonly registry = new Registry();
  readonly #logger: Logger | undefined;
  readonly #httpRequests: Counter<'method' | 'route' | 'status'>;
  readonly #httpDuration: Histogram<'method' | 'route'>;
  readonly #ingestPoints: Counter<'transport' | 'shape' | 'result'>;
  readonly #ingestBatches: Counter<'transport' | 'shape'>;
  readonly #ingestBatchDuration: Histogram<'transport' | 'shape'>;
  readonly #deliveries: Counter<'outcome'>;
  readonly #deliveryDuration: Histogram<'outcome'>;
  readonly #acks: Counter<'outcome'>;
  readonly #sourceUp: Gauge<'source'>;
  readonly #sources = new Map<string, ScrapeSource>();

  constructor(options: { logger?: Logger; defaultMetrics?: boolean } = {}) {
    this.#logger = options.logger;
    const registers = [this.registry];
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry, prefix: 'sortie_' });
    this.#httpRequests = new Counter({
      name: 'sortie_http_requests_total',
      help: 'HTTP requests answered, by method, matched route pattern ("unmatched" for 404s without a route) and status',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
    this.#httpDuration = new Histogram({
      name: 'sortie_http_request_duration_seconds',
      help: 'Time from receiving an HTTP request to its response, by method and matched route pattern',
      labelNames: ['method', 'route'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.#ingestPoints = new Counter({
      name: 'sortie_ingest_points_total',
      help: 'Telemetry points received, by transport (grpc, http), storage shape and result (written, duplicate, ignored)',
      labelNames: ['transport', 'shape', 'result'],
      registers,
    });
    this.#ingestBatches = new Counter({
      name: 'sortie_ingest_batches_total',
      help: 'Bulk writes of telemetry (one per Submit, StreamSubmit flush or HTTP append), by transport and storage shape',
      labelNames: ['transport', 'shape'],
      registers,
    });
    this.#ingestBatchDuration = new Histogram({
      name: 'sortie_ingest_batch_duration_seconds',
      help: 'Time from a decoded batch handed to the database writer to its rows committed (the wait behind the write before it included), by transport and storage shape',
      labelNames: ['transport', 'shape'],
      buckets: [0.001, 0.0025, 0.005, 0.0075, 0.01, 0.0125, 0.015, 0.0175, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    });
    this.#deliveries = new Counter({
      name: 'sortie_deliveries_total',
      help: 'Looks at delivery jobs by outcome (delivered, retry, failed, abandoned, refused, busy, skipped)',
      labelNames: ['outcome'],
      registers,
    });
    this.#deliveryDuration = new Histogram({
      name: 'sortie_delivery_duration_seconds',
      help: 'Duration of webhook POSTs to receivers, by outcome',
      labelNames: ['outcome'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.#acks = new Counter({
      name: 'sortie_acks_total',
      help: 'POST /api/commands/ack answers by outcome (acked, nacked, duplicate, conflict, rejected, rate_limited, invalid, error)',
      labelNames: ['outcome'],
      registers,
    });
    this.#sourceUp = new Gauge({
      name: 'sortie_metrics_source_up',
      help: 'Whether the last scrape could read a source of gauges (database, nats): 1 yes, 0 no',
      labelNames: ['source'],
      registers,
    });
    // Every outcome exists from the start, so rate() and alerts see 0 rather than no series.
    for (const outcome of DELIVERY_OUTCOMES) this.#deliveries.inc({ outcome }, 0);
    for (const outcome of ACK_OUTCOMES) this.#acks.inc({ outcome }, 0);
  }

  /** One answered HTTP request; `route` must be a pattern, never the raw path. */
  httpRequest(method: string, route: string, status: number, seconds: number): void {
    const m = HTTP_METHODS.has(method) ? method : 'OTHER';
    this.#httpRequests.inc({ method: m, route, status: String(status) });
    this.#httpDuration.observe({ method: m, route }, seconds);
  }

  /** Points of one or more bulk writes (`batches`), counted once per write. */
  ingested(transport: IngestTransport, shape: IngestShape, counts: IngestCounts, batches: number): void {
    if (counts.written > 0) this.#ingestPoints.inc({ transport, shape, result: 'written' }, counts.written);
    if (counts.duplicates > 0) this.#ingestPoints.inc({ transport, shape, result: 'duplicate' }, counts.duplicates);
    if (counts.ignored > 0) this.#ingestPoints.inc({ transport, shape, result: 'ignored' }, counts.ignored);
    if (batches > 0) this.#ingestBatches.inc({ transport, shape }, batches);
  }

  /** One bulk write committed, `seconds` after its batch was handed to the writer. */
  ingestBatchWritten(transport: IngestTransport, shape: IngestShape, seconds: number): void {
    this.#ingestBatchDuration.observe({ transport, shape }, seconds);
  }

  /** One look at a delivery job; `postSeconds` when a POST was made. */
  delivery(outcome: DeliveryOutcome, postSeconds?: number): void {
    this.#deliveries.inc({ outcome });
    if (postSeconds !== undefined) this.#deliveryDuration.observe({ outcome }, postSeconds);
  }

  ack(outcome: AckOutcome): void {
    this.#acks.inc({ outcome });
  }

  /**
   * Gauges `read` at every scrape. When `read` fails or is slow, `sortie_metrics_source_up{source}` is 0
   * and these gauges are left out of that scrape rather than repeating stale values.
   */
  addSource<K extends string>(source: string, gauges: Record<K, { name: string; help: string }>, read: () => Promise<Record<K, number>>): void {
    const made = new Map<string, Gauge>();
    for (const [key, { name, help }] of Object.entries<{ name: string; help: string }>(gauges)) {
      made.set(key, new Gauge({ name, help, registers: [this.registry] }));
    }
    this.#sources.set(source, { gauges: made, read });
  }

  /** The Prometheus text. Never fails because a source is down: that source reports 0 in source_up. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    await Promise.all(
      [...this.#sources].map(async ([source, { gauges, read }]) => {
        try {
          const values = await withTimeout(read(), SOURCE_TIMEOUT_MS, `${source} did not answer within ${SOURCE_TIMEOUT_MS} ms`);
          for (const [key, gauge] of gauges) gauge.set(values[key] ?? 0);
          this.#sourceUp.set({ source }, 1);
        } catch (err) {
          for (const gauge of gauges.values()) gauge.remove();
          this.#sourceUp.set({ source }, 0);
          this.#logger?.debug({ err, source }, 'metrics source unavailable; its gauges are left out of this scrape');
        }
      }),
    );
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

/** `promise`, or a rejection after `ms`. The timer never keeps the process alive. */
export async function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TimeoutError(message)), ms);
    timer.unref();
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export class TimeoutError extends Error {
  override name = 'TimeoutError';
}
