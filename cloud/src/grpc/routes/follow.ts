import type { JsonObject, MessageInitShape } from '@bufbuild/protobuf';
import type { HandlerContext } from '@connectrpc/connect';
import type { FollowRequest, FollowUpdateSchema } from '@sortie/contracts';
import { ServiceError } from '../../platform/errors.ts';
import { follow, type FollowMessage } from '../../live/follow.ts';
import { principalOf, requestIdKey } from '../rpc/context.ts';
import { toConnectError } from '../rpc/errors.ts';
import { uuidField } from '../rpc/handler.ts';
import { microsToTimestamp } from '../rpc/timestamps.ts';
import type { GrpcDeps } from '../rpc/deps.ts';

type FollowUpdateInit = MessageInitShape<typeof FollowUpdateSchema>;

/**
 * Follow (server-streaming): the live capability's updates (live/follow.ts) as FollowUpdate messages.
 * The stream ends when the client cancels, or with UNAVAILABLE when this server shuts down (the
 * gRPC port's drain, or the service's). Logged once when it opens and once when it ends.
 */
export function followHandler({ ctx, draining }: GrpcDeps) {
  return async function* (request: FollowRequest, context: HandlerContext): AsyncGenerator<FollowUpdateInit> {
    const requestId = context.values.get(requestIdKey);
    const started = performance.now();
    let updates = 0;
    let outcome = 'cancelled';
    try {
      const principal = principalOf(context);
      const input = {
        organizationId: principal.organizationId,
        datasetId: uuidField(request.datasetId, 'dataset_id'),
        experimentId: uuidField(request.experimentId, 'experiment_id', { optional: true }),
        channelIds: request.channelIds,
        windowMs: request.windowMs,
        budget: request.maxPointsPerWindow,
        commands: principal.scopes.has('commands:read'),
      };
      const stopped = AbortSignal.any([context.signal, draining]);
      ctx.logger.info({ requestId, rpc: 'Follow', protocol: context.protocolName, datasetId: input.datasetId, channels: input.channelIds.length }, 'follow opened');
      for await (const message of follow(ctx, input, stopped)) {
        updates++;
        yield toUpdate(message);
      }
      if (draining.aborted && !context.signal.aborted) {
        outcome = 'drained';
        throw new ServiceError('unavailable', 'the server is shutting down; follow again (another replica answers)');
      }
    } catch (error) {
      const failure = toConnectError(error, { logger: ctx.logger, requestId });
      outcome = failure.rawMessage;
      throw failure;
    } finally {
      ctx.logger.info({ requestId, rpc: 'Follow', ms: Math.round(performance.now() - started), updates, outcome }, 'follow ended');
    }
  };
}

function toUpdate(m: FollowMessage): FollowUpdateInit {
  return {
    reset: m.reset,
    series: m.series.map((s) => ({
      channelId: s.channelId,
      rawPoints: BigInt(s.rawPoints),
      points: Array.from(s.samples.t, (t, i) => ({ timestamp: microsToTimestamp(t), value: s.samples.v[i]! })),
    })),
    head: m.head === undefined ? undefined : microsToTimestamp(m.head),
    events: m.events.map((e) => ({
      id: e.id,
      time: microsToTimestamp(e.time.getTime() * 1000),
      kind: e.kind,
      message: e.message,
      // google.protobuf.Struct is a plain JSON object in protobuf-es.
      data: e.data as JsonObject,
    })),
    commands: m.commands as unknown as JsonObject[],
    dropped: BigInt(m.dropped),
  };
}
