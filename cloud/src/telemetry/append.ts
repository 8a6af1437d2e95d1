import type { AppendRequest, AppendResponse, ErrorDetail } from '@sortie/contracts';
import { sql } from 'kysely';
import type { AppContext } from '../context.ts';
import { listChannelRows, requireDataset } from '../datasets/queries.ts';
import type { ChannelRow } from '../db/schema.ts';
import { conflict, invalidRequest } from '../http/api-error.ts';
import { isoToEpochMicros } from './timestamps.ts';
import { coerceJsonValue } from './wide-values.ts';

const CH_N = /^ch_\d+$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MAX_DETAILS = 50;

/**
 * HTTP append to a wide dataset. Values are addressed by `ch_N` or by channel name; rows sharing a
 * timestamp merge (a later value for the same column wins). One bulk upsert per request.
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
  const details: ErrorDetail[] = [];
  // time (µs) -> column -> value
  const merged = new Map<bigint, { iso: string; values: Map<string, unknown> }>();
  const used = new Map<string, ChannelRow>();

  body.rows.forEach((row, i) => {
    const time = isoToEpochMicros(row.timestamp);
    let target = merged.get(time);
    for (const [key, raw] of Object.entries(row.values)) {
      const field = `rows[${i}].values.${key}`;
      const channel = CH_N.test(key) ? byColumn.get(key) : byName.get(key);
      if (!channel) {
        if (UUID.test(key)) {
          // The spec's trap: a channel UUID is not an address. Succeed, write nothing, and say so.
          ignored.add(key);
        } else if (CH_N.test(key)) {
          details.push({ field, message: `channel ${key} does not exist in this dataset` });
        } else {
          details.push({ field, message: `no channel named "${key}" in this dataset` });
        }
        continue;
      }
      if (!channel.physical_type) {
        details.push({
          field,
          message: `channel ${channel.col_name} ("${channel.name}") has no physical column yet; register the dataset with it to create one`,
        });
        continue;
      }
      if (raw === null) continue;
      const coerced = coerceJsonValue(channel.physical_type, raw, channel.data_type);
      if (!coerced.ok) {
        details.push({ field, message: `${coerced.message} for ${channel.col_name} (${channel.data_type})` });
        continue;
      }
      if (!target) {
        target = { iso: row.timestamp, values: new Map() };
        merged.set(time, target);
      }
      target.values.set(channel.col_name, coerced.value);
      used.set(channel.col_name, channel);
    }
  });

  if (details.length > 0) {
    const first = details[0]!;
    throw invalidRequest(`${first.field}: ${first.message}${details.length > 1 ? ` (and ${details.length - 1} more)` : ''}`, details.slice(0, MAX_DETAILS));
  }

  const columns = [...used.values()].sort((a, b) => (a.col_index ?? 0) - (b.col_index ?? 0));
  let valuesWritten = 0;
  if (columns.length > 0 && merged.size > 0) {
    const rows = [...merged.values()];
    const times = rows.map((r) => r.iso);
    const arrays = columns.map((ch) => rows.map((r) => r.values.get(ch.col_name) ?? null));
    valuesWritten = arrays.reduce((n, values) => n + values.filter((v) => v !== null).length, 0);
    const table = sql.table(dataset.table_name!);
    const names = columns.map((ch) => sql.ref(ch.col_name));
    const sources = [sql`${times}::timestamptz[]`, ...columns.map((ch, i) => sql`${arrays[i]}::${sql.raw(ch.physical_type!)}[]`)];
    const updates = columns.map((ch) => sql`${sql.ref(ch.col_name)} = coalesce(excluded.${sql.ref(ch.col_name)}, t.${sql.ref(ch.col_name)})`);
    await sql`
      insert into ${table} as t (time, ${sql.join(names)})
      select * from unnest(${sql.join(sources)})
      on conflict (time) do update set ${sql.join(updates)}
    `.execute(ctx.db);
  }
  return { rowsWritten: merged.size, valuesWritten, ignoredKeys: [...ignored] };
}
