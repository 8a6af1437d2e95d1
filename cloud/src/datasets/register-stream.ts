import type { RegisterStreamRequest, RegisterStreamResponse } from '@sortie/contracts';
import type { AppContext } from '../platform/context.ts';
import { ServiceError, conflict } from '../platform/errors.ts';
import { insertWideChannel, listChannelRows, nextColumnIndex, requireExperiment, toChannel } from './queries.ts';
import { addWideColumns, columnName, createWideTable, MAX_WIDE_CHANNELS, physicalTypeOf, wideTableName } from './wide-table.ts';

/**
 * POST /api/streams/register. Idempotent on (experiment, dataset name). For wide datasets every
 * declared channel ends up with a physical column; channels already declared keep their index, new
 * ones take the next free index, so re-registering with a longer list widens the table.
 */
export async function registerStream(ctx: AppContext, organizationId: string, body: RegisterStreamRequest): Promise<RegisterStreamResponse> {
  return ctx.db.transaction().execute(async (tx) => {
    await requireExperiment(tx, organizationId, body.experimentId);
    const newId = crypto.randomUUID();
    const inserted = await tx
      .insertInto('datasets')
      .values({
        id: newId,
        organization_id: organizationId,
        experiment_id: body.experimentId,
        name: body.datasetName,
        storage_shape: body.storageShape,
        codec: body.codec ?? null,
        dialect: body.dialect ?? null,
        format: body.format ?? null,
        table_name: body.storageShape === 'wide' ? wideTableName(newId) : null,
      })
      .onConflict((oc) => oc.columns(['experiment_id', 'name']).doNothing())
      .returning('id')
      .executeTakeFirst();
    // Lock the row so concurrent registrations of one dataset widen it one at a time.
    const dataset = await tx
      .selectFrom('datasets')
      .selectAll()
      .where('experiment_id', '=', body.experimentId)
      .where('name', '=', body.datasetName)
      .forUpdate()
      .executeTakeFirstOrThrow();
    const created = inserted !== undefined;

    if (dataset.storage_shape !== body.storageShape) {
      throw conflict(`dataset "${body.datasetName}" is already registered as ${dataset.storage_shape}, not ${body.storageShape}`);
    }
    if (dataset.storage_shape === 'narrow') {
      if (dataset.format !== body.format || dataset.codec !== body.codec || dataset.dialect !== body.dialect) {
        throw conflict(`dataset "${body.datasetName}" is registered with format ${dataset.format}, codec ${dataset.codec}, dialect ${dataset.dialect}`);
      }
      return {
        experimentId: dataset.experiment_id,
        datasetId: dataset.id,
        datasetName: dataset.name,
        storageShape: 'narrow',
        created,
        addedColumns: [],
        channels: (await listChannelRows(tx, dataset.id)).map(toChannel),
      };
    }

    const table = dataset.table_name!;
    if (created) await createWideTable(tx, table, ctx.database.timescale);
    const existing = await listChannelRows(tx, dataset.id);
    const byName = new Map(existing.map((c) => [c.name, c]));
    let nextIndex = nextColumnIndex(existing);
    const added: Array<{ name: string; type: string }> = [];
    const now = ctx.clock.now();

    // PostgreSQL's limit is per table and counts every column ever added, so check before any DDL.
    const physical = existing.filter((c) => c.physical_type).length;
    const wanted = (body.channels ?? []).filter((declared) => !byName.get(declared.name)?.physical_type).length;
    if (physical + wanted > MAX_WIDE_CHANNELS) {
      const message = `dataset "${body.datasetName}" has ${physical} channel columns and this call adds ${wanted}: a wide dataset holds at most ${MAX_WIDE_CHANNELS} (PostgreSQL allows ${MAX_WIDE_CHANNELS + 1} columns per table, one of them time)`;
      throw new ServiceError('conflict', message, { details: [{ field: 'channels', message: `at most ${MAX_WIDE_CHANNELS} channels per wide dataset` }] });
    }

    for (const declared of body.channels ?? []) {
      const known = byName.get(declared.name);
      if (known && known.physical_type) continue;
      const type = physicalTypeOf(known?.data_type ?? declared.dataType);
      if (known) {
        // Declared earlier through channels/create (metadata only): give it its column now.
        await tx.updateTable('channels').set({ physical_type: type, updated_at: now }).where('id', '=', known.id).execute();
        added.push({ name: known.col_name, type });
        continue;
      }
      const index = nextIndex++;
      await insertWideChannel(tx, { organizationId, datasetId: dataset.id, index, channel: declared, physicalType: type, now });
      added.push({ name: columnName(index), type });
    }
    await addWideColumns(tx, table, added);

    return {
      experimentId: dataset.experiment_id,
      datasetId: dataset.id,
      datasetName: dataset.name,
      storageShape: 'wide',
      created,
      addedColumns: added.map((a) => a.name),
      channels: (await listChannelRows(tx, dataset.id)).map(toChannel),
    };
  });
}
