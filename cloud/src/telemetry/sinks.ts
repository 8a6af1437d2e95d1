import type { AppContext } from '../platform/context.ts';
import { requireDataset } from '../datasets/queries.ts';
import type { DatasetRow } from '../db/schema.ts';
import { ServiceError, conflict } from '../platform/errors.ts';
import { openNarrowSink } from './narrow/narrow-sink.ts';
import { countedSink } from './ingest/ingest-metrics.ts';
import type { SinkFactory, TelemetrySink } from './ingest/sink.ts';
import { openWideSink } from './wide/wide-sink.ts';

// What a transport needs of a sink, from the entry it opens sinks with (ingest/ is the wing's own).
export { countsResponse, type TelemetrySink } from './ingest/sink.ts';

/** Stream formats of StreamSessionHeader.format; "" is the wide format (points addressed by ch_N). */
export const STREAM_FORMATS = ['', 'mavlink-raw-v1'] as const;
export type StreamFormat = (typeof STREAM_FORMATS)[number];

/** The storage shape each format writes to. */
const SHAPE_OF_FORMAT: Record<StreamFormat, DatasetRow['storage_shape']> = { '': 'wide', 'mavlink-raw-v1': 'narrow' };

/**
 * Writers by storage shape and format. The narrow MAVLink writer (mavlink-raw-v1 frames decoded into
 * signal rows) plugs in here.
 */
export const SINKS: Record<DatasetRow['storage_shape'], Partial<Record<StreamFormat, SinkFactory>>> = {
  wide: { '': openWideSink },
  narrow: { 'mavlink-raw-v1': openNarrowSink },
};

/** A valid request for something this server does not do yet (gRPC UNIMPLEMENTED). */
export class NotYetSupportedError extends Error {
  override name = 'NotYetSupportedError';
}

export function isStreamFormat(format: string): format is StreamFormat {
  return (STREAM_FORMATS as readonly string[]).includes(format);
}

/** Open the writer for a dataset of the caller's organization; the dataset's shape must match the format. */
export async function openSink(
  ctx: AppContext,
  organizationId: string,
  target: { experimentId: string; datasetId: string; format: string },
): Promise<TelemetrySink> {
  if (!isStreamFormat(target.format)) {
    throw new ServiceError('invalid_request', `format "${target.format}" is unknown; use "" for wide datasets or "mavlink-raw-v1" for narrow ones`);
  }
  const dataset = await requireDataset(ctx.db, organizationId, target.datasetId, target.experimentId || undefined);
  // A flight imported from a ULog or DataFlash file holds that log's tables: frames streamed into it would not be its.
  if (dataset.storage_shape === 'narrow' && (dataset.format === 'px4-ulog' || dataset.format === 'ardupilot-dataflash')) {
    throw conflict(`dataset ${dataset.id} was imported from a ${dataset.format === 'px4-ulog' ? 'PX4 ULog' : 'DataFlash'} file; it takes no stream (import the file again, or stream into a dataset of its own)`);
  }
  const factory = SINKS[dataset.storage_shape][target.format];
  // Only gRPC opens sinks (HTTP append writes through append.ts), hence the transport.
  if (factory) return countedSink(await factory(ctx, dataset), ctx.metrics, 'grpc', dataset.storage_shape, () => ctx.live.committed(dataset.id));
  if (SHAPE_OF_FORMAT[target.format] !== dataset.storage_shape) {
    const carried = target.format === '' ? 'points addressed by ch_N index (the wide format)' : `the ${target.format} format`;
    throw conflict(`dataset ${dataset.id} is ${dataset.storage_shape}, but this call carries ${carried}`);
  }
  throw new NotYetSupportedError(`ingest of ${dataset.storage_shape} datasets in the ${target.format || 'wide'} format is not available yet`);
}

/** Limit rules on MAVLink datasets watch numeric fields of the dialect only (limits/ checks a rule's signal with it). */
export { isNumericMavlinkSignal } from './narrow/limit-samples.ts';
/** Start-up: narrow data of the former one-row-per-field shape moved into the message tables (narrow/legacy-samples.ts). */
export { moveLegacyNarrowSamples } from './narrow/legacy-samples.ts';
/** Start-up with TimescaleDB: narrow message tables made before it was present become compressed hypertables. */
export { applyNarrowTimescaleLayout } from './narrow/narrow-timescale.ts';
