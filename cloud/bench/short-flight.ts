// npm run bench:short-flight — what a short MAVLink flight costs to store: arduplane-sitl-vtol.tlog (23,894
// frames, 41 message types, 4 minutes) streamed once through gRPC StreamSubmit (mavlink-raw-v1) into a
// fresh narrow dataset of the real service (in this process, on a fresh database of the shared
// PostgreSQL), then measured as bench:mavlink measures it (narrow/storage-size.ts): Postgres bytes per
// frame, broken down by where they sit. Then again after a VACUUM of the dataset's tables (what
// autovacuum leaves: free space and visibility map forks), and the catalog rows the dataset's tables
// added (not counted in the figure; shown so they are not forgotten). Bytes are deterministic: one run.
// Options: BENCH_BATCH (500 frames per StreamSubmit message).
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { TelemetryService } from '@sortie/contracts';
import { sql } from 'kysely';
import { fixtureFrames, fixturePoints } from '../src/telemetry/narrow/fixture-frames.ts';
import { describeStorage, narrowStorage } from '../src/telemetry/narrow/storage-size.ts';
import { startTestService } from '../src/testing/test-service.ts';

const BATCH = Number(process.env.BENCH_BATCH ?? 500);
const TARGET = 150;

const frames = fixtureFrames('arduplane-sitl-vtol.tlog');
const t = await startTestService();
try {
  const db = t.service.ctx.db;
  const org = await t.createOrg();
  const experiment = await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'short flight' } });
  const registered = await t.call('POST', '/api/streams/register', {
    key: org.key,
    body: { experimentId: experiment.body.id, datasetName: 'sitl', storageShape: 'narrow', codec: 'mavlink', dialect: 'ardupilotmega', format: 'mavlink-raw-v1' },
  });
  const datasetId: string = registered.body.datasetId;
  const catalogBytes = async () =>
    (await sql<{ b: number }>`select sum(pg_total_relation_size(c.oid))::float8 as b from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = 'pg_catalog' and c.relkind = 'r'`.execute(db)).rows[0]!.b;
  const catalogBefore = await catalogBytes();

  const client = createClient(TelemetryService, createGrpcTransport({ baseUrl: t.service.grpcUrl }));
  const points = fixturePoints(frames);
  async function* messages() {
    yield { message: { case: 'header' as const, value: { experimentId: experiment.body.id, datasetId, format: 'mavlink-raw-v1' } } };
    for (let i = 0; i < points.length; i += BATCH) yield { message: { case: 'batch' as const, value: { points: points.slice(i, i + BATCH) } } };
  }
  const response = await client.streamSubmit(messages(), { headers: { 'x-api-key': org.key } });
  if (Number(response.written) !== frames.length) throw new Error(`sent ${frames.length} frames, the server wrote ${response.written}`);

  const stored = await narrowStorage(db, [datasetId]);
  if (stored.frames !== frames.length) throw new Error(`sent ${frames.length} frames, but the message tables hold ${stored.frames} rows`);
  const catalog = (await catalogBytes()) - catalogBefore;
  console.log(`bench:short-flight — arduplane-sitl-vtol.tlog (${frames.length.toLocaleString('en-US')} frames) streamed once into a fresh narrow dataset, ${BATCH}-frame messages`);
  const perFrame = stored.bytes / stored.frames;
  console.log(`as streamed        : ${perFrame.toFixed(1)} bytes per frame (target ≤ ${TARGET}: ${perFrame <= TARGET ? 'met' : 'MISSED'})`);
  for (const line of describeStorage(stored)) console.log(line);

  const tables = await sql<{ table_name: string }>`select table_name from narrow_message_tables where dataset_id = ${datasetId}::uuid`.execute(db);
  for (const { table_name } of tables.rows) await sql`vacuum ${sql.table(table_name)}`.execute(db);
  const vacuumed = await narrowStorage(db, [datasetId]);
  console.log(`after VACUUM       : ${(vacuumed.bytes / vacuumed.frames).toFixed(1)} bytes per frame (the maps autovacuum adds)`);
  for (const line of describeStorage(vacuumed)) console.log(line);
  console.log(`catalog rows       : ${(catalog / stored.frames).toFixed(1)} B/frame, ${(catalog / 1024).toFixed(0)} KiB more in pg_catalog's tables and their indexes (not in the figure)`);
} finally {
  await t.stop();
}
