import type { MessageInitShape } from '@bufbuild/protobuf';
import { Code, ConnectError, type HandlerContext } from '@connectrpc/connect';
import type { StreamSubmitResponseSchema } from '@sortie/contracts';
import { raceAbort } from '../../platform/abort-race.ts';
import { ServiceError } from '../../platform/errors.ts';
import { countsResponse, openSink, type TelemetrySink } from '../../telemetry/sinks.ts';
import { principalOf } from '../rpc/context.ts';
import type { AnyStreamSubmitRequest } from '../rpc/lazy-schema.ts';
import { runRpc, uuidField } from '../rpc/handler.ts';
import { GRPC_LIMITS } from '../rpc/limits.ts';
import type { GrpcDeps } from '../rpc/deps.ts';

const FLUSH_DUE: unique symbol = Symbol('flush due');
const DRAINING: unique symbol = Symbol('draining');
const WRITTEN: unique symbol = Symbol('written');

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
export function streamSubmitHandler({ ctx, keys, draining }: GrpcDeps) {
  return (requests: AsyncIterable<AnyStreamSubmitRequest>, context: HandlerContext): Promise<MessageInitShape<typeof StreamSubmitResponseSchema>> => {
    let messages = 0;
    let sink: TelemetrySink | undefined;
    let datasetId = '';
    return runRpc(
      ctx,
      context,
      async () => {
        const principal = principalOf(context);
        let oldestStaged = 0;
        /** The write running behind the reading, if any. */
        let writing: Promise<void> | undefined;
        const settle = async () => {
          const w = writing;
          writing = undefined;
          await w;
        };
        const write = async (startedAt: number) => {
          const { points, rows } = await sink!.flush();
          ctx.logger.debug({ datasetId, points, rows, ms: +(performance.now() - startedAt).toFixed(2) }, 'telemetry batch written');
        };
        /** Writes what is staged and waits for it (and for the write before it). */
        const flush = async () => {
          await settle();
          if (!sink || sink.staged === 0) return;
          await write(oldestStaged);
        };
        /** Hands what is staged to the sink (which takes it at once and writes it after the write before) and goes on. */
        const flushBehind = () => {
          const w = write(oldestStaged);
          // Handled here so a failure while nothing awaits it is not unhandled; settle() or the read race still throws it.
          w.catch(() => {});
          writing = w;
        };

        const iterator = requests[Symbol.asyncIterator]();
        let next: Promise<IteratorResult<AnyStreamSubmitRequest>> | undefined;
        try {
          for (;;) {
            if (draining.aborted) {
              await flush();
              throw new ConnectError('server shutting down', Code.Unavailable);
            }
            next ??= iterator.next();
            let result: IteratorResult<AnyStreamSubmitRequest> | typeof FLUSH_DUE | typeof DRAINING | typeof WRITTEN;
            if (sink && sink.staged > 0) {
              // Single points wait for company, but not for long.
              let timer: NodeJS.Timeout | undefined;
              const due = new Promise<typeof FLUSH_DUE>((resolve) => {
                timer = setTimeout(resolve, Math.max(0, oldestStaged + GRPC_LIMITS.streamFlushMs - performance.now()), FLUSH_DUE);
              });
              // `next` first: a stream whose client has finished answers OK even while draining.
              result = await raceAbort(Promise.race([next, due]), draining, DRAINING);
              clearTimeout(timer);
            } else if (writing) {
              // A failed write ends the stream now, not when the client next sends.
              result = await raceAbort(Promise.race([next, writing.then((): typeof WRITTEN => WRITTEN)]), draining, DRAINING);
              if (result === WRITTEN) {
                writing = undefined;
                continue;
              }
            } else {
              result = await raceAbort(next, draining, DRAINING);
            }
            if (result === DRAINING) continue;
            if (result === FLUSH_DUE) {
              await flush();
              continue;
            }
            next = undefined;
            if (result.done) break;
            const message = result.value.message;
            const index = messages++;
            await keys.revalidate(principal);

            if (index === 0) {
              if (message.case !== 'header') {
                throw new ServiceError('invalid_request', 'the first StreamSubmit message must be a StreamSessionHeader (experiment_id, dataset_id, format)');
              }
              datasetId = uuidField(message.value.datasetId, 'header.dataset_id');
              sink = await openSink(ctx, principal.organizationId, {
                experimentId: uuidField(message.value.experimentId, 'header.experiment_id', { optional: true }),
                datasetId,
                format: message.value.format,
              });
              continue;
            }
            const received = performance.now();
            switch (message.case) {
              case 'header':
                throw new ServiceError('invalid_request', `message ${index}: the StreamSessionHeader may appear only once, as the first message`);
              case 'batch': {
                // A batch is its own bulk write: pending single points go first. It was decoded while the
                // write before it ran; its own write is handed to the sink now (which prepares it and
                // starts it when that one has committed), and the next message is read only once the
                // write before has settled: one message written, one waiting, never more.
                if (sink!.staged > 0) await flush();
                const batch = message.value;
                await sink!.stage(batch instanceof Uint8Array ? { encodedBatch: batch } : { points: batch.points }, (i) => `message ${index}, batch.points[${i}]`);
                const before = writing;
                oldestStaged = received;
                flushBehind();
                await before;
                break;
              }
              case 'point': {
                if (sink!.staged === 0) oldestStaged = received;
                try {
                  const point = message.value;
                  await sink!.stage(point instanceof Uint8Array ? { encodedPoints: [point] } : { points: [point] }, () => `message ${index}, point`);
                } catch (error) {
                  await flush();
                  throw error;
                }
                if (sink!.staged >= GRPC_LIMITS.streamFlushPoints) await flush();
                break;
              }
              default:
                throw new ServiceError('invalid_request', `message ${index} carries neither a point nor a batch`);
            }
          }
        } catch (error) {
          // Whatever went wrong, the write in flight finishes first: the messages before the failing
          // one stay written. If that write failed too, its error (the earlier one) is the answer.
          await settle();
          throw error;
        } finally {
          // A message still being read is abandoned with the stream; its failure must not go unhandled.
          next?.catch(() => {});
        }
        if (!sink) throw new ServiceError('invalid_request', 'the stream ended without a StreamSessionHeader');
        await flush();
        const counts = sink.counts();
        return { ...countsResponse(counts), messages: BigInt(messages), duplicates: BigInt(counts.duplicates) };
      },
      (r) => ({ datasetId, messages, accepted: Number(r.accepted), written: Number(r.written), ignored: Number(r.ignored), duplicates: Number(r.duplicates) }),
    );
  };
}
