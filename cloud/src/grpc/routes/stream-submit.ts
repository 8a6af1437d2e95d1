import type { MessageInitShape } from '@bufbuild/protobuf';
import { Code, ConnectError, type HandlerContext } from '@connectrpc/connect';
import type { StreamSubmitResponseSchema } from '@sortie/contracts';
import { raceAbort } from '../../platform/abort-race.ts';
import { ServiceError } from '../../platform/errors.ts';
import { countsResponse, openSink, type TelemetrySink } from '../../telemetry/sinks.ts';
import { principalOf } from '../rpc/context.ts';
import type { AnyStreamSubmitRequest } from '../rpc/lazy-schema.ts';
import type { CachedPrincipal } from '../../auth/key-cache.ts';
import { runRpc, uuidField } from '../rpc/handler.ts';
import { GRPC_LIMITS } from '../rpc/limits.ts';
import type { GrpcDeps } from '../rpc/deps.ts';

const FLUSH_DUE: unique symbol = Symbol('flush due');
const DRAINING: unique symbol = Symbol('draining');
const WRITTEN: unique symbol = Symbol('written');

type Message = AnyStreamSubmitRequest['message'];
/** What the reading loop waits on: the next message, the single points' flush time, the server closing, the write behind finishing. */
type Arrival = IteratorResult<AnyStreamSubmitRequest> | typeof FLUSH_DUE | typeof DRAINING | typeof WRITTEN;

/**
 * StreamSubmit: a header, then points or batches. A batch message is one bulk write; single-point
 * messages are gathered into one write per GRPC_LIMITS.streamFlushPoints points or streamFlushMs,
 * whichever comes first.
 *
 * One write runs behind the reading: while a batch is being written, the next message is pulled,
 * decoded (staged) and its write prepared, so the server's work and the database's overlap instead of
 * taking turns. That write starts when the one before has committed (the sink's writes take turns),
 * and the message after it is pulled only then: at most one message waits here, and a slow database
 * still holds the client back through HTTP/2 flow control instead of piling up messages.
 *
 * A message that fails validation ends the stream with its error; messages before it stay written
 * (the write in flight is awaited first), nothing of it is. A failed write ends the stream with its
 * own error as soon as it fails.
 *
 * When the server starts closing, the stream writes what it has staged and ends UNAVAILABLE
 * ("server shutting down") instead of waiting for a half-close that may never come. The only
 * acknowledgement of a stream is its final answer, so the client sends it all again (elsewhere or
 * later); what was written collapses onto its rows as duplicates.
 */
export function streamSubmitHandler(deps: GrpcDeps) {
  return (requests: AsyncIterable<AnyStreamSubmitRequest>, context: HandlerContext): Promise<MessageInitShape<typeof StreamSubmitResponseSchema>> => {
    let session: StreamSubmitSession | undefined;
    return runRpc(
      deps.ctx,
      context,
      async () => {
        session = new StreamSubmitSession(deps, principalOf(context), requests[Symbol.asyncIterator]());
        await session.read();
        return session.finish();
      },
      (r) => ({
        datasetId: session?.datasetId ?? '',
        messages: session?.messages ?? 0,
        accepted: Number(r.accepted),
        written: Number(r.written),
        ignored: Number(r.ignored),
        duplicates: Number(r.duplicates),
      }),
    );
  };
}

/** One StreamSubmit call: its sink, the points staged, the write running behind the reading. */
class StreamSubmitSession {
  messages = 0;
  datasetId = '';
  #sink: TelemetrySink | undefined;
  /** When the oldest staged point arrived: single points are written at most streamFlushMs after it. */
  #oldestStaged = 0;
  /** The write running behind the reading, if any. */
  #writing: Promise<void> | undefined;
  /** The message being read, if the loop has asked for one that has not come. */
  #next: Promise<IteratorResult<AnyStreamSubmitRequest>> | undefined;
  readonly #deps: GrpcDeps;
  readonly #principal: CachedPrincipal;
  readonly #iterator: AsyncIterator<AnyStreamSubmitRequest>;

  constructor(deps: GrpcDeps, principal: CachedPrincipal, iterator: AsyncIterator<AnyStreamSubmitRequest>) {
    this.#deps = deps;
    this.#principal = principal;
    this.#iterator = iterator;
  }

  /** Reads and writes until the client half-closes, the server closes, or a message or write fails. */
  async read(): Promise<void> {
    try {
      for (;;) {
        if (this.#deps.draining.aborted) {
          await this.#flush();
          throw new ConnectError('server shutting down', Code.Unavailable);
        }
        const arrival = await this.#nextArrival();
        if (arrival === DRAINING || arrival === WRITTEN) continue;
        if (arrival === FLUSH_DUE) {
          await this.#flush();
          continue;
        }
        this.#next = undefined;
        if (arrival.done) return;
        await this.#take(arrival.value.message);
      }
    } catch (error) {
      // Whatever went wrong, the write in flight finishes first: the messages before the failing
      // one stay written. If that write failed too, its error (the earlier one) is the answer.
      await this.#settle();
      throw error;
    } finally {
      // A message still being read is abandoned with the stream; its failure must not go unhandled.
      this.#next?.catch(() => {});
    }
  }

  /** The answer once the client has half-closed: the last points written, then the counts. */
  async finish(): Promise<MessageInitShape<typeof StreamSubmitResponseSchema>> {
    if (!this.#sink) throw new ServiceError('invalid_request', 'the stream ended without a StreamSessionHeader');
    await this.#flush();
    const counts = this.#sink.counts();
    return { ...countsResponse(counts), messages: BigInt(this.messages), duplicates: BigInt(counts.duplicates) };
  }

  /** The next thing to act on, whichever comes first. */
  async #nextArrival(): Promise<Arrival> {
    const { draining } = this.#deps;
    this.#next ??= this.#iterator.next();
    if (this.#sink && this.#sink.staged > 0) {
      // Single points wait for company, but not for long.
      let timer: NodeJS.Timeout | undefined;
      const due = new Promise<typeof FLUSH_DUE>((resolve) => {
        timer = setTimeout(resolve, Math.max(0, this.#oldestStaged + GRPC_LIMITS.streamFlushMs - performance.now()), FLUSH_DUE);
      });
      // `next` first: a stream whose client has finished answers OK even while draining.
      const arrival = await raceAbort(Promise.race([this.#next, due]), draining, DRAINING);
      clearTimeout(timer);
      return arrival;
    }
    if (this.#writing) {
      // A failed write ends the stream now, not when the client next sends.
      const arrival = await raceAbort(Promise.race([this.#next, this.#writing.then((): typeof WRITTEN => WRITTEN)]), draining, DRAINING);
      if (arrival === WRITTEN) this.#writing = undefined;
      return arrival;
    }
    return raceAbort(this.#next, draining, DRAINING);
  }

  /** One message: the header opens the sink; points and batches are staged and written. */
  async #take(message: Message): Promise<void> {
    const index = this.messages++;
    await this.#deps.keys.revalidate(this.#principal);
    if (index === 0) return this.#open(message);
    const received = performance.now();
    switch (message.case) {
      case 'header':
        throw new ServiceError('invalid_request', `message ${index}: the StreamSessionHeader may appear only once, as the first message`);
      case 'batch':
        return this.#takeBatch(message.value, index, received);
      case 'point':
        return this.#takePoint(message.value, index, received);
      default:
        throw new ServiceError('invalid_request', `message ${index} carries neither a point nor a batch`);
    }
  }

  async #open(message: Message): Promise<void> {
    if (message.case !== 'header') {
      throw new ServiceError('invalid_request', 'the first StreamSubmit message must be a StreamSessionHeader (experiment_id, dataset_id, format)');
    }
    this.datasetId = uuidField(message.value.datasetId, 'header.dataset_id');
    this.#sink = await openSink(this.#deps.ctx, this.#principal.organizationId, {
      experimentId: uuidField(message.value.experimentId, 'header.experiment_id', { optional: true }),
      datasetId: this.datasetId,
      format: message.value.format,
    });
  }

  /**
   * A batch is its own bulk write: pending single points go first. It was decoded while the write
   * before it ran; its own write is handed to the sink now (which prepares it and starts it when that
   * one has committed), and the next message is read only once the write before has settled: one
   * message written, one waiting, never more.
   */
  async #takeBatch(batch: Extract<Message, { case: 'batch' }>['value'], index: number, received: number): Promise<void> {
    const sink = this.#sink!;
    if (sink.staged > 0) await this.#flush();
    await sink.stage(batch instanceof Uint8Array ? { encodedBatch: batch } : { points: batch.points }, (i) => `message ${index}, batch.points[${i}]`);
    const before = this.#writing;
    this.#oldestStaged = received;
    this.#flushBehind();
    await before;
  }

  /** A single point waits for company: written with others at streamFlushPoints, or streamFlushMs after the oldest. */
  async #takePoint(point: Extract<Message, { case: 'point' }>['value'], index: number, received: number): Promise<void> {
    const sink = this.#sink!;
    if (sink.staged === 0) this.#oldestStaged = received;
    try {
      await sink.stage(point instanceof Uint8Array ? { encodedPoints: [point] } : { points: [point] }, () => `message ${index}, point`);
    } catch (error) {
      await this.#flush();
      throw error;
    }
    if (sink.staged >= GRPC_LIMITS.streamFlushPoints) await this.#flush();
  }

  /** Waits for the write behind the reading, if any. */
  async #settle(): Promise<void> {
    const w = this.#writing;
    this.#writing = undefined;
    await w;
  }

  async #write(startedAt: number): Promise<void> {
    const { points, rows } = await this.#sink!.flush();
    this.#deps.ctx.logger.debug({ datasetId: this.datasetId, points, rows, ms: +(performance.now() - startedAt).toFixed(2) }, 'telemetry batch written');
  }

  /** Writes what is staged and waits for it (and for the write before it). */
  async #flush(): Promise<void> {
    await this.#settle();
    if (!this.#sink || this.#sink.staged === 0) return;
    await this.#write(this.#oldestStaged);
  }

  /** Hands what is staged to the sink (which takes it at once and writes it after the write before) and goes on. */
  #flushBehind(): void {
    const w = this.#write(this.#oldestStaged);
    // Handled here so a failure while nothing awaits it is not unhandled; settle() or the read race still throws it.
    w.catch(() => {});
    this.#writing = w;
  }
}
