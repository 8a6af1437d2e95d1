import { sql } from 'kysely';
import type { CreateImportQuery, ImportFormat, LogImport } from '@sortie/contracts';
import type { AppContext } from '../platform/context.ts';
import { deleteDataset, insertDataset, requireExperiment } from '../datasets/queries.ts';
import { insertEventRows } from '../events/queries.ts';
import { ServiceError } from '../platform/errors.ts';
import { dropNarrowDataset, openNarrowWriter } from '../telemetry/log-import.ts';
import { datasetSpan } from '../telemetry/read.ts';
import { detectFormat, headHex } from './detect.ts';
import { ImportFindings, type ImportProgressSink } from './findings.ts';
import { createDataFlashParser } from './formats/dataflash.ts';
import { NotThisFormatError } from './formats/records.ts';
import { createULogParser } from './formats/ulog.ts';
import { findLogClock, importLogFile, type MakeParser } from './log-file.ts';
import { flightParameters } from './parameters.ts';
import { findVehicleSystem, importMavlinkFile } from './mavlink-file.ts';
import { findImportOfFile, type LogImportRow } from './queries.ts';
import type { UploadedFile } from './upload.ts';


/** What each format's dataset says of itself (spec: a narrow dataset's codec, dialect and format). */
const DATASET_FORMAT: Record<ImportFormat, { codec: string; dialect: string | null; format: string }> = {
  ulog: { codec: 'ulog', dialect: null, format: 'px4-ulog' },
  dataflash: { codec: 'dataflash', dialect: null, format: 'ardupilot-dataflash' },
  tlog: { codec: 'mavlink', dialect: 'ardupilotmega', format: 'mavlink-raw-v1' },
  mavlink: { codec: 'mavlink', dialect: 'ardupilotmega', format: 'mavlink-raw-v1' },
};

const PARSERS: Record<'ulog' | 'dataflash', MakeParser> = { ulog: createULogParser, dataflash: createDataFlashParser };

/** An import still `importing` whose row has not moved for this long was cut short (a server stop): the same file then imports anew. */
export const STALE_IMPORT_MS = 60_000;
/** How often a running import moves its row on. */
const HEARTBEAT_MS = 5_000;

/** Events and parameters are inserted this many per statement. */
const INSERT_ROWS = 1000;

/**
 * Import an uploaded file (docs/decisions/0014-onboard-logs.md):
 *  1. its format, from `format` or its first bytes; a file that is none is refused before anything exists;
 *  2. the same bytes imported before (by SHA-256, per organization) answer that import: one flight, once;
 *  3. a first look at the file: the GPS time that puts a log on UTC, or a MAVLink file's vehicle;
 *  4. a new narrow dataset of the experiment and the import's row, in one transaction;
 *  5. the file read in order, its messages written as rows in batches by the narrow writer;
 *  6. events, parameters, the report and the log's metadata, in one transaction.
 * If anything fails after 4, the dataset and all it holds are dropped: nothing is left behind.
 */
export async function importFile(
  ctx: AppContext,
  organizationId: string,
  query: CreateImportQuery,
  upload: UploadedFile,
  progress?: ImportProgressSink,
): Promise<{ row: LogImportRow; duplicate: boolean }> {
  const format = query.format ?? detectFormat(upload.head);
  if (!format) {
    throw new ServiceError(
      'invalid_request',
      `the file is not a log Sortie can import (it starts with ${headHex(upload.head) || 'nothing: it is empty'}): send a PX4 ULog (.ulg), an ArduPilot DataFlash log (.BIN), a MAVLink telemetry log (.tlog), or a raw MAVLink capture with format=mavlink`,
      { details: [{ field: 'body', message: 'is not a ULog, DataFlash, tlog or MAVLink file' }] },
    );
  }
  const earlier = await findImportOfFile(ctx.db, organizationId, upload.sha256);
  if (earlier && !isStale(ctx, earlier)) return { row: earlier, duplicate: true };
  // The same file's import was cut short by a server stop: what it left is dropped and the file imported anew.
  if (earlier) await dropNarrowDataset(ctx.db, earlier.dataset_id);
  await requireExperiment(ctx.db, organizationId, query.experimentId);

  const findings = new ImportFindings();
  const nowUs = ctx.clock.now().getTime() * 1000;
  let timeSource: 'gps' | 'start' | 'import' = 'gps';
  let run: (writer: Awaited<ReturnType<typeof openNarrowWriter>>, progress: ImportProgressSink) => Promise<void>;
  if (format === 'ulog' || format === 'dataflash') {
    const makeParser = PARSERS[format];
    const clock = await refusingOtherFormats(format, () => findLogClock(upload.path, makeParser));
    let offsetUs = clock.gpsOffsetUs;
    const gps = offsetUs !== undefined;
    findings.firstBootUs = clock.firstBootUs;
    if (offsetUs === undefined) {
      const startUs = query.start ? Date.parse(query.start) * 1000 : undefined;
      timeSource = startUs !== undefined ? 'start' : 'import';
      offsetUs = startUs !== undefined ? startUs - (clock.firstBootUs ?? 0) : nowUs - (clock.lastBootUs ?? 0);
      findings.warn(
        startUs !== undefined
          ? 'the log has no GPS time: its first message is placed at the start given'
          : 'the log has no GPS time: it is placed so that its last message falls at the moment of import (give start= to place it)',
      );
    }
    const namespace = format === 'ulog' ? 'ulog' : 'dataflash';
    run = (writer, progress) => importLogFile({ path: upload.path, namespace, makeParser, writer, offsetUs, gps, findings, progress });
  } else {
    const sysid = await findVehicleSystem(upload.path, format);
    if (sysid === undefined) {
      throw new ServiceError('invalid_request', `the file holds no MAVLink frame: it is not a ${format === 'tlog' ? 'telemetry log' : 'MAVLink capture'}`, {
        details: [{ field: 'body', message: 'holds no MAVLink frame' }],
      });
    }
    run = (writer, progress) => importMavlinkFile({ path: upload.path, format, sysid, writer, nowUs, findings, progress });
  }

  const created = await createDataset(ctx, organizationId, query, format, upload);
  if (!created.row) return { row: created.existing!, duplicate: true };
  const datasetId = created.row.dataset_id;
  const importId = created.row.id;
  // The caller's progress, and the import's row moved on every few seconds (see STALE_IMPORT_MS).
  let beat = Date.now();
  const tracked: ImportProgressSink = (bytes, messages) => {
    progress?.(bytes, messages);
    if (Date.now() - beat < HEARTBEAT_MS) return;
    beat = Date.now();
    ctx.db.updateTable('log_imports').set({ updated_at: ctx.clock.now() }).where('id', '=', importId).execute().catch(() => {});
  };
  try {
    const dataset = await ctx.db.selectFrom('datasets').selectAll().where('id', '=', datasetId).executeTakeFirstOrThrow();
    const writer = await openNarrowWriter(ctx, dataset);
    await refusingOtherFormats(format, () => run(writer, tracked));
    const finalReport = findings.report(timeSource);
    const span = await datasetSpan(ctx.db, dataset);
    if (span) {
      finalReport.start = span.first;
      finalReport.end = span.last;
    }
    if (format === 'tlog' || format === 'mavlink') {
      // Its parameters are its PARAM_VALUE messages, read as GET /api/datasets/parameters reads them.
      const params = await flightParameters(ctx.db, dataset);
      finalReport.parameters = params.parameters.reduce((n, p) => n + 1 + p.changes.length, 0);
      finalReport.parameterChanges = params.parameters.reduce((n, p) => n + p.changes.length, 0);
      // On UTC by the vehicle's GPS time when a SYSTEM_TIME carried it, else by the tlog's receive times (a raw capture's: the import's).
      const gpsTimed = await ctx.db.selectFrom('narrow_boot_sessions').select('boot_session').where('dataset_id', '=', datasetId).where('gps_offset_us', 'is not', null).executeTakeFirst();
      finalReport.timeSource = gpsTimed ? 'gps' : format === 'tlog' ? 'recorded' : 'import';
    }
    const row = await ctx.db.transaction().execute(async (tx) => {
      for (let i = 0; i < findings.events.length; i += INSERT_ROWS) {
        await insertEventRows(
          tx,
          findings.events.slice(i, i + INSERT_ROWS).map((e) => ({
            id: crypto.randomUUID(),
            organization_id: organizationId,
            dataset_id: datasetId,
            time: new Date(Math.floor(e.timeUs / 1000)),
            kind: e.kind,
            message: e.message,
            data: JSON.stringify(e.data),
          })),
        );
      }
      for (let i = 0; i < findings.parameters.length; i += INSERT_ROWS) {
        await tx
          .insertInto('flight_parameters')
          .values(
            findings.parameters.slice(i, i + INSERT_ROWS).map((p, k) => ({
              dataset_id: datasetId,
              seq: i + k,
              name: p.name,
              value: p.value,
              boot_us: p.bootUs,
              time: p.timeUs === null ? null : new Date(Math.floor(p.timeUs / 1000)),
              initial: p.initial,
            })),
          )
          .execute();
      }
      return tx
        .updateTable('log_imports')
        .set({ status: 'done', report: JSON.stringify(finalReport), metadata: JSON.stringify(findings.metadata), finished_at: ctx.clock.now() })
        .where('id', '=', created.row!.id)
        .returningAll()
        .executeTakeFirstOrThrow();
    });
    ctx.live.committed(datasetId);
    return { row, duplicate: false };
  } catch (error) {
    await dropNarrowDataset(ctx.db, datasetId).catch((e: unknown) => ctx.logger.error({ err: e, datasetId }, 'could not remove the dataset of a failed import'));
    throw error;
  }
}

function isStale(ctx: AppContext, row: LogImportRow): boolean {
  return row.status === 'importing' && ctx.clock.now().getTime() - row.updated_at.getTime() > STALE_IMPORT_MS;
}

/** A reader's refusal of the file (bad magic or version, for a format given or detected) as the client's error. */
async function refusingOtherFormats<T>(format: ImportFormat, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof NotThisFormatError) {
      throw new ServiceError('invalid_request', `the file is not a valid ${format} log: ${error.message}`, { details: [{ field: 'body', message: error.message }] });
    }
    throw error;
  }
}

/** The dataset's name: the one asked for, else the file's name without extension, else format and hash; ` (2)`, ` (3)`… when taken. */
function baseName(query: CreateImportQuery, format: ImportFormat, sha256: Buffer): string {
  if (query.name) return query.name;
  const file = query.fileName?.split(/[\\/]/).pop()?.replace(/\.[^.]*$/, '').trim();
  return file || `${format}-${sha256.toString('hex').slice(0, 12)}`;
}

async function createDataset(
  ctx: AppContext,
  organizationId: string,
  query: CreateImportQuery,
  format: ImportFormat,
  upload: UploadedFile,
): Promise<{ row?: LogImportRow; existing?: LogImportRow }> {
  return ctx.db.transaction().execute(async (tx) => {
    const base = baseName(query, format, upload.sha256);
    const taken = new Set(
      (await tx.selectFrom('datasets').select('name').where('experiment_id', '=', query.experimentId).where(sql<boolean>`left(name, ${base.length}) = ${base}`).execute()).map((r) => r.name),
    );
    let name = base;
    for (let k = 2; taken.has(name); k++) name = `${base} (${k})`;
    const datasetId = crypto.randomUUID();
    const kind = DATASET_FORMAT[format];
    await insertDataset(tx, { id: datasetId, organization_id: organizationId, experiment_id: query.experimentId, name, storage_shape: 'narrow', ...kind, table_name: null });
    const row = await tx
      .insertInto('log_imports')
      .values({
        id: crypto.randomUUID(),
        organization_id: organizationId,
        experiment_id: query.experimentId,
        dataset_id: datasetId,
        sha256: upload.sha256,
        format,
        file_name: query.fileName ?? null,
        bytes: upload.bytes,
        status: 'importing',
        report: null,
        metadata: '{}',
        created_at: ctx.clock.now(),
        updated_at: ctx.clock.now(),
      })
      .onConflict((oc) => oc.columns(['organization_id', 'sha256']).doNothing())
      .returningAll()
      .executeTakeFirst();
    if (row) return { row };
    // The same file, imported by another request that committed first: answer that one, keep nothing of this.
    await deleteDataset(tx, datasetId);
    return { existing: (await findImportOfFile(tx, organizationId, upload.sha256))! };
  });
}

export function toLogImport(row: LogImportRow): LogImport {
  return {
    id: row.id,
    experimentId: row.experiment_id,
    datasetId: row.dataset_id,
    format: row.format as ImportFormat,
    fileName: row.file_name,
    bytes: Number(row.bytes),
    sha256: Buffer.from(row.sha256).toString('hex'),
    status: row.status,
    metadata: (row.metadata ?? {}) as LogImport['metadata'],
    report: (row.report ?? null) as LogImport['report'],
    createdAt: row.created_at.toISOString(),
    finishedAt: row.finished_at?.toISOString() ?? null,
  };
}
