import { isUuid, type AppendRequest, type AppendResponse, type ErrorDetail } from '@sortie/contracts';
import type { AppContext } from '../platform/context.ts';
import { watchedDataset } from '../platform/limit-watch.ts';
import { listChannelRows, requireDataset } from '../datasets/queries.ts';
import { conflict, invalidRequest } from '../platform/errors.ts';
import { isoToEpochMicrosNumber } from './wide/timestamps.ts';
import { binaryArrays, quotedBytea, quotedText, textArrays } from './sql/sql-arrays.ts';
import { WideBatchBuilder, writableColumns } from './wide/wide-batch.ts';
import { coerceJsonValue } from './wide/wide-values.ts';
import { writeWideBatch } from './wide/wide-writer.ts';
import { wideCommittedSamples } from './wide/limit-samples.ts';

const CH_N = /^ch_\d+$/;
const MAX_DETAILS = 50;

/**
 * HTTP append to a wide dataset. Values are addressed by `ch_N` or by channel name; rows sharing a
 * timestamp merge (a later value for the same column wins). One bulk write per request, through the
 * writer gRPC ingest uses.
 */
export async function appendRows(ctx: AppContext, organizationId: string, body: AppendRequest): Promise<AppendResponse> {
  const dataset = await requireDataset(ctx.db, organizationId, body.datasetId, body.experimentId);
  if (dataset.storage_shape === 'narrow') {
    throw conflict('dataset is narrow: ingest MAVLink through the edge agent (gRPC StreamSubmit), not HTTP append');
  }
  const channels = await listChannelRows(ctx.db, dataset.id);
  const byColumn = new Map(channels.map((ch) => [ch.col_name, ch]));
  const byName = new Map(channels.map((ch) => [ch.name, ch]));

  const ignored = new Set<string>();
  let ignoredValues = 0;
  const details: ErrorDetail[] = [];
  const columns = writableColumns(channels);
  const builder = new WideBatchBuilder(columns);

  // One pass over the rows as parsed, straight into the columnar batch: no per-row or per-value objects
  // on the way (the field path is built only for an error), so a flood leaves little garbage behind.
  const rows = body.rows;
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!;
    // In range by the contract's Timestamp (MAX_TIMESTAMP_SECONDS), so the µs are an exact double.
    const time = isoToEpochMicrosNumber(row.timestamp);
    const values = row.values;
    // for…in walks own keys in the order Object.entries gives them (the body is a parsed JSON object).
    for (const key in values) {
      const raw = values[key]!;
      const isColumnName = CH_N.test(key);
      const channel = isColumnName ? byColumn.get(key) : byName.get(key);
      if (!channel) {
        if (isUuid(key)) {
          // The spec's trap: a channel UUID is not an address. Succeed, write nothing, and say so.
          ignored.add(key);
          ignoredValues++;
        } else if (isColumnName) {
          details.push({ field: fieldOf(i, key), message: `channel ${key} does not exist in this dataset` });
        } else {
          details.push({ field: fieldOf(i, key), message: `no channel named "${key}" in this dataset` });
        }
        continue;
      }
      const column = channel.col_index === null ? undefined : columns.get(channel.col_index);
      if (!channel.physical_type || !column) {
        details.push({
          field: fieldOf(i, key),
          message: `channel ${channel.col_name} ("${channel.name}") has no physical column yet; register the dataset with it to create one`,
        });
        continue;
      }
      if (raw === null) continue;
      // The common case, a number for a double column, without coerceJsonValue's result object.
      if (typeof raw === 'number' && column.physicalType === 'double precision') {
        builder.putChecked(time, column, raw, undefined);
        continue;
      }
      const coerced = coerceJsonValue(channel.physical_type, raw, channel.data_type);
      if (!coerced.ok) {
        details.push({ field: fieldOf(i, key), message: `${coerced.message} for ${channel.col_name} (${channel.data_type})` });
        continue;
      }
      const cell = storedCell(column.physicalType, coerced.value);
      builder.putChecked(time, column, cell.num, cell.text);
    }
  }

  if (details.length > 0) {
    const first = details[0]!;
    throw invalidRequest(`${first.field}: ${first.message}${details.length > 1 ? ` (and ${details.length - 1} more)` : ''}`, details.slice(0, MAX_DETAILS));
  }

  // The same writer as gRPC ingest: one bulk upsert, and the rollups Query reads kept in step.
  const batch = builder.take();
  const target = { datasetId: dataset.id, table: dataset.table_name!, arrays: ctx.database.kind === 'postgres' ? binaryArrays : textArrays };
  const written = await writeWideBatch(ctx.db, target, batch);
  if (batch.times.length > 0) ctx.live.committed(target.datasetId);
  // After the commit, on what it newly stored: the dataset's limit rules (limits/watch.ts). A request
  // answers once its crossings are stored, so a client reading events next sees them.
  await ctx.limits.committed(watchedDataset(dataset), wideCommittedSamples(batch, written.fresh));
  await ctx.limits.settled(dataset.id);
  ctx.metrics.ingested('http', 'wide', { written: batch.cells, duplicates: 0, ignored: ignoredValues }, 1);
  return { rowsWritten: batch.times.length, valuesWritten: batch.cells, ignoredKeys: [...ignored] };
}

/** The field a detail names: the value's path in the body. */
function fieldOf(row: number, key: string): string {
  return `rows[${row}].values.${key}`;
}

/** A coerced JSON value as the writer takes it: a double for numeric columns, element text for non-double ones. */
function storedCell(physicalType: string, value: unknown): { num: number; text: string | undefined } {
  switch (physicalType) {
    case 'double precision':
      return { num: value as number, text: undefined };
    case 'bigint':
    case 'numeric(20,0)':
      return { num: Number(value), text: value as string };
    case 'boolean':
      return { num: value ? 1 : 0, text: value ? 't' : 'f' };
    case 'text':
      return { num: NaN, text: quotedText(value as string) };
    default:
      return { num: NaN, text: quotedBytea(value as Uint8Array) };
  }
}
