import type { HandlerContext } from '@connectrpc/connect';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { SubmitResponseSchema, TelemetryPoint } from '@sortie/contracts';
import { countsResponse, openSink } from '../../telemetry/sinks.ts';
import { principalOf } from '../rpc/context.ts';
import type { AnySubmitRequest } from '../rpc/lazy-schema.ts';
import { runRpc, uuidField } from '../rpc/handler.ts';
import type { GrpcDeps } from '../rpc/deps.ts';

/** Submit: one batch of points to one dataset, written in one bulk write (all of it, or nothing). */
export function submitHandler({ ctx }: GrpcDeps) {
  return (request: AnySubmitRequest, context: HandlerContext): Promise<MessageInitShape<typeof SubmitResponseSchema>> =>
    runRpc(
      ctx,
      context,
      async () => {
        const principal = principalOf(context);
        const sink = await openSink(ctx, principal.organizationId, {
          experimentId: uuidField(request.experimentId, 'experiment_id', { optional: true }),
          datasetId: uuidField(request.datasetId, 'dataset_id'),
          format: '',
        });
        const points = request.points;
        const source = points.length > 0 && points[0] instanceof Uint8Array ? { encodedPoints: points as Uint8Array[] } : { points: points as TelemetryPoint[] };
        await sink.stage(source, (i) => `points[${i}]`);
        await sink.flush();
        return countsResponse(sink.counts());
      },
      (r) => ({ datasetId: request.datasetId, accepted: Number(r.accepted), written: Number(r.written), ignored: Number(r.ignored) }),
    );
}
