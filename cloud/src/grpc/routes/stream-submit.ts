import type { MessageInitShape } from '@bufbuild/protobuf';
import { Code, ConnectError, type HandlerContext } from '@connectrpc/connect';
import type { StreamSubmitResponseSchema } from '@sortie/contracts';
import { raceAbort } from '../../platform/abort-race.ts';
import { ApiError } from '../../http/api-error.ts';
import { countsResponse, openSink, type TelemetrySink } from '../../telemetry/sinks.ts';
import { principalOf } from '../rpc/context.ts';
import type { AnyStreamSubmitRequest } from '../rpc/lazy-schema.ts';
import { runRpc, uuidField } from '../rpc/handler.ts';
import { GRPC_LIMITS } from '../rpc/limits.ts';
import type { GrpcDeps } from '../rpc/deps.ts';

const FLUSH_DUE = Symbol('flush due');
const DRAINING = Symbol('draining');

/**
 * StreamSubmit: a header, then points or batches. Each message is written before the next one is
 * pulled, so a slow database holds the client back through HTTP/2 flow control instead of piling up
 * messages here. A batch message is one bulk write; single-point messages are gathered into one write
 * per GRPC_LIMITS.streamFlushPoints points or streamFlushMs, whichever comes first.
 *
 * A message that fails validation ends the stream with its error; messages before it stay written,
 * nothing of it is.
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
        const flush = async () => {
          if (!sink || sink.staged === 0) return;
          const { points, rows } = await sink.flush();
          ctx.logger.debug({ datasetId, points, rows, ms: +(performance.now() - oldestStaged).toFixed(2) }, 'telemetry batch written');
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
            let result: IteratorResult<AnyStreamSubmitRequest> | typeof FLUSH_DUE | typeof DRAINING;
            if (sink && sink.staged > 0) {
              // Single points wait for company, but not for long.
              let timer: NodeJS.Timeout | undefined;
              const due = new Promise<typeof FLUSH_DUE>((resolve) => {
                timer = setTimeout(resolve, Math.max(0, oldestStaged + GRPC_LIMITS.streamFlushMs - performance.now()), FLUSH_DUE);
              });
              // `next` first: a stream whose client has finished answers OK even while draining.
              result = await raceAbort(Promise.race([next, due]), draining, DRAINING);
              clearTimeout(timer);
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
                throw new ApiError('invalid_request', 'the first StreamSubmit message must be a StreamSessionHeader (experiment_id, dataset_id, format)');
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
                throw new ApiError('invalid_request', `message ${index}: the StreamSessionHeader may appear only once, as the first message`);
              case 'batch': {
                // A batch is its own bulk write: pending single points go first.
                await flush();
                oldestStaged = received;
                const batch = message.value;
                await sink!.stage(batch instanceof Uint8Array ? { encodedBatch: batch } : { points: batch.points }, (i) => `message ${index}, batch.points[${i}]`);
                await flush();
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
                throw new ApiError('invalid_request', `message ${index} carries neither a point nor a batch`);
            }
          }
        } finally {
          // A message still being read is abandoned with the stream; its failure must not go unhandled.
          next?.catch(() => {});
        }
        if (!sink) throw new ApiError('invalid_request', 'the stream ended without a StreamSessionHeader');
        await flush();
        const counts = sink.counts();
        return { ...countsResponse(counts), messages: BigInt(messages), duplicates: BigInt(counts.duplicates) };
      },
      (r) => ({ datasetId, messages, accepted: Number(r.accepted), written: Number(r.written), ignored: Number(r.ignored), duplicates: Number(r.duplicates) }),
    );
  };
}
