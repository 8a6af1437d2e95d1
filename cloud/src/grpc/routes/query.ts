import type { MessageInitShape } from '@bufbuild/protobuf';
import type { HandlerContext } from '@connectrpc/connect';
import type { QueryRequest, QueryResponseSchema } from '@sortie/contracts';
import { readSeries, type SeriesResult } from '../../telemetry/read.ts';
import { principalOf } from '../rpc/context.ts';
import { isJsonContentType } from '../rpc/lazy-schema.ts';
import { encodeSeries } from '../rpc/series-wire.ts';
import { runRpc, uuidField } from '../rpc/handler.ts';
import { microsToTimestamp, timestampMicros } from '../rpc/timestamps.ts';
import type { GrpcDeps } from '../rpc/deps.ts';

/** Query: per channel a downsampled series of at most max_points_per_channel samples, and exact raw counts. */
export function queryHandler({ ctx }: GrpcDeps) {
  return (request: QueryRequest, context: HandlerContext): Promise<MessageInitShape<typeof QueryResponseSchema>> =>
    runRpc(
      ctx,
      context,
      async () => {
        const principal = principalOf(context);
        const datasetId = uuidField(request.datasetId, 'dataset_id');
        const experimentId = uuidField(request.experimentId, 'experiment_id', { optional: true });
        const from = request.from && timestampMicros(request.from, 'from');
        const to = request.to && timestampMicros(request.to, 'to');
        const read = { datasetId, experimentId, channelIds: request.channelIds, from, to, maxPointsPerChannel: request.maxPointsPerChannel };
        const series = await readSeries(ctx.db, principal.organizationId, read, ctx.database.pool);
        return seriesResponse(series, request.columns, !isJsonContentType(context.requestHeader.get('content-type') ?? undefined));
      },
      (r) => ({ datasetId: request.datasetId, channels: request.channelIds.length, totalRawPoints: Number(r.totalRawPoints) }),
    );
}

/**
 * The answer in the layout asked for. As columns, each series is two arrays of doubles (times in µs,
 * values): packed on the wire, no message or Timestamp per sample, so the server writes and the client
 * reads a few tight loops instead of a message per sample (bench:query prints both layouts). A binary
 * answer's series are written here already encoded (the lazy descriptor declares them bytes).
 */
function seriesResponse(series: SeriesResult[], columns: boolean, binary: boolean): MessageInitShape<typeof QueryResponseSchema> {
  const totalRawPoints = BigInt(series.reduce((n, s) => n + s.rawPoints, 0));
  if (binary) return { series: series.map((s) => encodeSeries(s, columns)) as never, totalRawPoints };
  return {
    series: series.map((s) => ({
      channelId: s.channelId,
      rawPoints: BigInt(s.rawPoints),
      ...(columns
        ? { timesUs: Array.from(s.samples.t), values: Array.from(s.samples.v) }
        : { points: Array.from(s.samples.t, (t, i) => ({ timestamp: microsToTimestamp(t), value: s.samples.v[i]! })) }),
    })),
    totalRawPoints,
  };
}
