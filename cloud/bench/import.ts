// npm run bench:import — POST /api/imports/create of a large PX4 ULog and a large ArduPilot DataFlash log
// (each ≥ 500 MB, built from the shared fixtures as below) to a server in a child process: messages and MB
// per second from the first byte sent to the answer (upload to disk, the GPS pre-pass, the read, every row
// written and committed), and the server's peak resident memory (VmHWM) during the import.
// Baseline in the same run: the same messages stored by the same narrow writer directly (this process, no
// HTTP, no file, no parsing): each log's messages read once into memory, then added to the writer's batches
// (NarrowBatch.addLogRow) and flushed as the importer flushes (16,384 rows, two in flight) as many times as
// the big file repeats them, into a dataset of their own.
// How the files are built (written to BENCH_IMPORT_DIR, the OS temp dir by default, and deleted after):
//   - ULog: sample_log_small.ulg's header and definitions section, then its data section (everything from
//     the first subscription on) repeated until the file is ≥ BENCH_IMPORT_MB. Each repetition's boot clock
//     starts over (a reboot every 20 minutes of log, as the readers see it).
//   - DataFlash: ardusub-small.BIN repeated whole (its FMT messages restate the same formats, which the
//     reader keeps) until ≥ BENCH_IMPORT_MB.
// Options: BENCH_IMPORT_MB (500), BENCH_RUNS (3: import and baseline alternated per format), BENCH_FORMATS (ulog,dataflash).
import { createReadStream } from 'node:fs';
import { mkdtemp, open, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { writeFileSync } from 'node:fs';
import { FIXTURE_DIR } from '@sortie/contracts/testing';
import { createDataFlashParser } from '../src/imports/formats/dataflash.ts';
import type { LogMessageType, LogParser, LogSink, LogValue } from '../src/imports/formats/records.ts';
import { createULogParser } from '../src/imports/formats/ulog.ts';
import { writeBehind } from '../src/imports/log-file.ts';
import { logTableLayout, openNarrowWriter } from '../src/telemetry/log-import.ts';
import type { AppContext } from '../src/platform/context.ts';
import { createTestDatabase } from '../src/testing/test-database.ts';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { api, createOrgAndKey, ownCpuMs, processCpuMs, startFlags, startServerProcess, type BenchServer } from './bench-env.ts';

const TARGET_MB = Number(process.env.BENCH_IMPORT_MB ?? 500);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const FORMATS = (process.env.BENCH_FORMATS ?? 'ulog,dataflash').split(',').map((f) => f.trim()) as Array<'ulog' | 'dataflash'>;
const SHARED = join(FIXTURE_DIR, '..');
const BATCH_ROWS = 16_384;

/** Where a ULog's data section starts: after the 16-byte header, the first message that is not a definition (B, F, I, M, P, Q). */
function ulogDataStart(bytes: Uint8Array): number {
  const definitions = new Set(['B', 'F', 'I', 'M', 'P', 'Q'].map((c) => c.charCodeAt(0)));
  let at = 16;
  while (at + 3 <= bytes.length && definitions.has(bytes[at + 2]!)) at += 3 + (bytes[at]! | (bytes[at + 1]! << 8));
  return at;
}

async function buildFile(dir: string, format: 'ulog' | 'dataflash'): Promise<{ path: string; bytes: number; repeats: number; fixture: Uint8Array }> {
  const fixture = new Uint8Array(await readFile(format === 'ulog' ? join(SHARED, 'ulog', 'sample_log_small.ulg') : join(SHARED, 'dataflash', 'ardusub-small.BIN')));
  const start = format === 'ulog' ? ulogDataStart(fixture) : 0;
  const head = fixture.subarray(0, start);
  const body = fixture.subarray(start);
  const repeats = Math.ceil((TARGET_MB * 1024 * 1024 - head.length) / body.length);
  const path = join(dir, `big.${format === 'ulog' ? 'ulg' : 'BIN'}`);
  const file = await open(path, 'w');
  await file.write(head);
  for (let i = 0; i < repeats; i++) await file.write(body);
  await file.close();
  return { path, bytes: (await stat(path)).size, repeats, fixture };
}

/** One repetition's messages, decoded once (the baseline adds them to batches as the importer would). */
function decodeOnce(format: 'ulog' | 'dataflash', fixture: Uint8Array) {
  const types: LogMessageType[] = [];
  const rows: Array<{ type: number; bootUs: number; values: LogValue[] }> = [];
  const noop = () => {};
  const sink: LogSink = {
    type: (t) => void (types[t.id] = t),
    data: (type, bootUs, values) => void rows.push({ type, bootUs, values: [...values] }),
    text: noop,
    param: noop,
    info: noop,
    clock: noop,
    skipped: noop,
  };
  const parser: LogParser = (format === 'ulog' ? createULogParser : createDataFlashParser)(sink);
  parser.push(fixture);
  parser.end();
  return { types, rows };
}

interface Result {
  seconds: number;
  messages: number;
  peakRssMb?: number;
  /** CPU seconds of the process that parsed and built the rows (the server, or this one). */
  nodeCpu: number;
}

async function importOverHttp(server: BenchServer, apiKey: string, experimentId: string, path: string, bytes: number, name: string): Promise<Result> {
  writeFileSync(`/proc/${server.child.pid}/clear_refs`, '5');
  const cpu0 = processCpuMs(server.child.pid!);
  const started = performance.now();
  const response = await fetch(`${server.httpUrl}/api/imports/create?${new URLSearchParams({ experimentId, name, fileName: name })}`, {
    method: 'POST',
    headers: { 'x-api-key': apiKey, 'content-type': 'application/octet-stream', 'content-length': String(bytes) },
    body: Readable.toWeb(createReadStream(path, { highWaterMark: 1 << 20 })) as ReadableStream,
    duplex: 'half',
  } as RequestInit);
  const answer = await response.json();
  const seconds = (performance.now() - started) / 1000;
  if (response.status !== 201) throw new Error(`import answered ${response.status}: ${JSON.stringify(answer)}`);
  return { seconds, messages: answer.report.messages, peakRssMb: server.peakRssMb(), nodeCpu: (processCpuMs(server.child.pid!) - cpu0) / 1000 };
}

async function directWriter(ctx: AppContext, experimentId: string, organizationId: string, decoded: ReturnType<typeof decodeOnce>, repeats: number, name: string): Promise<Result> {
  const datasetId = crypto.randomUUID();
  await ctx.db.insertInto('datasets').values({ id: datasetId, organization_id: organizationId, experiment_id: experimentId, name, storage_shape: 'narrow', codec: 'bench', dialect: null, format: 'bench', table_name: null }).execute();
  const dataset = await ctx.db.selectFrom('datasets').selectAll().where('id', '=', datasetId).executeTakeFirstOrThrow();
  const layouts = decoded.types.map((t) => logTableLayout(t.id, t.name, t.fields.map((f) => ({ signal: `ulog.${t.name}${t.instance ? `[${t.instance}]` : ''}.${f.name}`, type: f.type }))));
  const cpu0 = ownCpuMs();
  const started = performance.now();
  const writer = await openNarrowWriter(ctx, dataset);
  writer.batch.sysid ??= 1;
  const flush = writeBehind(writer);
  const offset = Date.UTC(2026, 0, 1) * 1000;
  let seq = 0;
  for (let r = 0; r < repeats; r++) {
    for (const row of decoded.rows) {
      seq++;
      const unix = row.bootUs + offset;
      writer.batch.addLogRow(layouts[row.type]!, seq, unix, row.bootUs, unix, offset, row.values);
      if (writer.staged >= BATCH_ROWS) await flush();
    }
  }
  if (writer.staged > 0) await flush();
  await flush.settled();
  return { seconds: (performance.now() - started) / 1000, messages: seq, nodeCpu: (ownCpuMs() - cpu0) / 1000 };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

// The direct writer runs in this process: with the flags the server runs with (npm start's), or the
// baseline would pay for a young generation the server does not have (a DataFlash log's small messages
// cost it twice the CPU without them). Re-run under them when started without.
const flags = startFlags();
if (!flags.every((f) => process.execArgv.includes(f))) {
  const child = spawnSync(process.execPath, [...process.execArgv, ...flags, fileURLToPath(import.meta.url)], { stdio: 'inherit' });
  process.exit(child.status ?? 1);
}

const dir = await mkdtemp(join(process.env.BENCH_IMPORT_DIR ?? tmpdir(), 'sortie-bench-import-'));
const database = await createTestDatabase();
const server = await startServerProcess(database.url, 'info', undefined, { SORTIE_IMPORT_DIR: dir });
const { apiKey, handle } = await createOrgAndKey(database.url);
try {
  const experimentId = (await api(server.httpUrl, apiKey, '/api/experiments/create', { name: 'bench:import' })).id as string;
  const organizationId = (await handle.db.selectFrom('experiments').select('organization_id').where('id', '=', experimentId).executeTakeFirstOrThrow()).organization_id;
  const ctx = { db: handle.db, database: handle, clock: { now: () => new Date() }, limits: { committed: async () => {} } } as unknown as AppContext;
  for (const format of FORMATS) {
    const file = await buildFile(dir, format);
    const decoded = decodeOnce(format, file.fixture);
    console.log(`${format}: ${(file.bytes / 1024 / 1024).toFixed(0)} MB (${file.repeats} repetitions of ${decoded.rows.length} messages, ${decoded.types.length} types)`);
    const imports: Result[] = [];
    const direct: Result[] = [];
    for (let run = 0; run < RUNS; run++) {
      // Alternated, so drift of the machine weighs on both alike. A run's file differs by name only: the
      // same bytes would answer the first import (one flight per file), so each run appends a byte.
      const runFile = join(dir, `run-${run}.${format}`);
      await rm(runFile, { force: true });
      const { copyFile, appendFile } = await import('node:fs/promises');
      await copyFile(file.path, runFile);
      await appendFile(runFile, new Uint8Array(run + 1));
      imports.push(await importOverHttp(server, apiKey, experimentId, runFile, file.bytes + run + 1, `${format}-import-${run}`));
      await rm(runFile, { force: true });
      direct.push(await directWriter(ctx, experimentId, organizationId, decoded, file.repeats, `${format}-direct-${run}`));
      const i = imports.at(-1)!;
      const d = direct.at(-1)!;
      console.log(
        `  run ${run + 1}: import ${(i.messages / i.seconds).toFixed(0)} msg/s ${(file.bytes / 1024 / 1024 / i.seconds).toFixed(1)} MB/s ${i.seconds.toFixed(1)} s, peak RSS ${i.peakRssMb!.toFixed(0)} MB, server CPU ${i.nodeCpu.toFixed(1)} s; direct writer ${(d.messages / d.seconds).toFixed(0)} msg/s ${d.seconds.toFixed(1)} s, writer CPU ${d.nodeCpu.toFixed(1)} s`,
      );
    }
    const rate = median(imports.map((r) => r.messages / r.seconds));
    const baseline = median(direct.map((r) => r.messages / r.seconds));
    console.log(`  ${format} median of ${RUNS}: import ${rate.toFixed(0)} msg/s, ${median(imports.map((r) => file.bytes / 1024 / 1024 / r.seconds)).toFixed(1)} MB/s, peak RSS ${median(imports.map((r) => r.peakRssMb!)).toFixed(0)} MB (max ${Math.max(...imports.map((r) => r.peakRssMb!)).toFixed(0)}); direct writer ${baseline.toFixed(0)} msg/s; ratio ${((rate / baseline) * 100).toFixed(1)} %`);
    await rm(file.path, { force: true });
  }
} finally {
  await server.stop();
  await handle.close();
  await database.drop();
  await rm(dir, { recursive: true, force: true });
}
