// `sortie import`, `imports`, `params` and `params diff` through `run` (what the bin calls) against the
// real service: real PX4 ULog and ArduPilot DataFlash logs from the shared fixtures uploaded with the
// progress on stderr, the same file twice, a file that is no log; and the parameters of two MAVLink
// flights streamed as the agent streams them, with PARAM_VALUE frames, compared.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { run } from '@sortie/cli';
import { createSortieClient, type SortieClient } from '@sortie/client';
import { createStreamSubmitClient } from '@sortie/client/node';
import { buildFrame, FIXTURE_CRC_EXTRA, FIXTURE_DIR, heartbeatPayload, PX4_MISSION_ARMED } from '@sortie/contracts/testing';
import { startTestService, type TestOrg, type TestService } from '@sortie/cloud/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const SHARED = path.join(FIXTURE_DIR, '..');
const ULOG = path.join(SHARED, 'ulog', 'sample_log_small.ulg');
const DATAFLASH = path.join(SHARED, 'dataflash', 'ardusub-small.BIN');

let t: TestService;
let org: TestOrg;
let client: SortieClient;
let experimentId: string;
let workDir: string;

class Capture extends PassThrough {
  text = '';
  isTTY: boolean;
  constructor(isTTY = false) {
    super();
    this.isTTY = isTTY;
    this.on('data', (chunk: Buffer) => (this.text += chunk.toString()));
  }
}

async function sortie(args: string[], options: { stderrTTY?: boolean } = {}) {
  const stdout = new Capture();
  const stderr = new Capture(options.stderrTTY);
  const code = await run(args, { env: { SORTIE_URL: t.url, SORTIE_API_KEY: org.key }, stdout, stderr });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

/** PARAM_VALUE's payload in wire order: param_value, param_count, param_index, param_id (16 chars), param_type (9: REAL32). */
function paramValuePayload(name: string, value: number, index: number, count: number): Uint8Array {
  const p = new Uint8Array(25);
  const v = new DataView(p.buffer);
  v.setFloat32(0, value, true);
  v.setUint16(4, count, true);
  v.setUint16(6, index, true);
  p.set(new TextEncoder().encode(name), 8);
  p[24] = 9;
  return p;
}

/**
 * A MAVLink flight as the agent streams it: a HEARTBEAT a second, the parameter list a ground station
 * reads at connect (one PARAM_VALUE per parameter), and `changes` echoed by the vehicle later in the flight.
 */
async function mavlinkFlight(name: string, params: Record<string, number>, changes: [at: number, name: string, value: number][] = []): Promise<string> {
  const { datasetId } = await client.datasets.register({ experimentId, datasetName: name, storageShape: 'narrow', codec: 'mavlink', dialect: 'ardupilotmega', format: 'mavlink-raw-v1' });
  const startUs = Date.UTC(2026, 4, 2, 9, 0, 0) * 1000;
  const frames: { atUs: number; msgid: number; payload: Uint8Array }[] = [];
  for (let s = 0; s < 10; s++) frames.push({ atUs: s * 1_000_000, msgid: 0, payload: heartbeatPayload(PX4_MISSION_ARMED) });
  const names = Object.keys(params);
  names.forEach((n, i) => frames.push({ atUs: 200_000 + i * 10_000, msgid: 22, payload: paramValuePayload(n, params[n]!, i, names.length) }));
  for (const [at, n, value] of changes) frames.push({ atUs: at * 1_000_000 + 500_000, msgid: 22, payload: paramValuePayload(n, value, 65535, names.length) });
  frames.sort((a, b) => a.atUs - b.atUs);
  const at = (us: number) => ({ seconds: BigInt(Math.floor(us / 1e6)), nanos: (us % 1e6) * 1000 });
  const points = frames.map((f, i) => ({
    timestamp: at(startUs + f.atUs),
    type: { case: 'bytes' as const, value: buildFrame({ msgid: f.msgid, payload: f.payload, crcExtra: FIXTURE_CRC_EXTRA[f.msgid]!, seq: i & 0xff }) },
    frameSeq: BigInt(i + 1),
  }));
  await createStreamSubmitClient({ grpcUrl: t.service.grpcUrl, apiKey: org.key }).streamSubmit({ experimentId, datasetId, format: 'mavlink-raw-v1' }, [{ points }]);
  return datasetId;
}

beforeAll(async () => {
  t = await startTestService();
  org = await t.createOrg('cli imports');
  client = createSortieClient({ baseUrl: t.url, apiKey: org.key });
  experimentId = (await client.experiments.create({ name: 'log day' })).id;
  workDir = await mkdtemp(path.join(tmpdir(), 'sortie-cli-imports-'));
});
afterAll(async () => {
  await t?.stop();
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

describe('sortie import', () => {
  it('imports a ULog into the experiment named, with plain progress lines off a terminal, and prints what it made', async () => {
    const out = await sortie(['import', ULOG, '--experiment', 'log day']);
    expect(out.code, out.stderr).toBe(0);
    // The upload from its start to its end, then the server's import of it, as lines a log file keeps.
    const lines = out.stderr.trim().split('\n');
    expect(lines[0]).toMatch(/^upload {2}\[\.+\] {3}0% {2}0 B of \d+\.\d KiB at/);
    expect(lines).toContainEqual(expect.stringMatching(/^upload {2}\[#+\] 100% {2}[\d.]+ KiB of [\d.]+ KiB at .*ETA 0:00$/));
    expect(lines.at(-1)).toMatch(/^import {2}\[#+\] 100% {2}.* \d+ messages {2}ETA 0:00$/);
    expect(out.stderr).not.toContain('\r');

    const fields = Object.fromEntries(out.stdout.trim().split('\n').map((l) => [l.slice(0, 10).trim(), l.slice(12)]));
    expect(fields.name).toBe('sample_log_small');
    expect(fields.experiment).toBe('log day');
    expect(fields.format).toBe('ulog');
    expect(fields.file).toMatch(/^sample_log_small\.ulg \([\d.]+ KiB\)$/);
    expect(Number(fields.messages)).toBeGreaterThan(1000);
    expect(fields.types).toMatch(/^\w+ \d+, .*\(\d+ types\)$/);
    expect(fields.span).toMatch(/^\d{4}-.*Z → \d{4}-.*Z \(\d+:\d\d\)$/);
    const imports = await client.imports.list({ experimentId });
    expect(imports).toHaveLength(1);
    expect(fields.dataset).toBe(imports[0]!.datasetId);
    expect(imports[0]!.report!.messages).toBe(Number(fields.messages));
  });

  it('the same file again answers the first import: same dataset, duplicate, exit 0', async () => {
    const first = (await client.imports.list({ experimentId }))[0]!;
    const again = await sortie(['import', ULOG, '--experiment', experimentId, '--json']);
    expect(again.code, again.stderr).toBe(0);
    const answer = JSON.parse(again.stdout);
    expect(answer).toMatchObject({ id: first.id, datasetId: first.datasetId, duplicate: true });
    const table = await sortie(['import', ULOG, '--experiment', experimentId]);
    expect(table.stdout).toMatch(/^duplicate +yes: this file was imported on /m);
    expect(table.stderr).toContain(`the same file was imported before: nothing new was made (its dataset is ${first.datasetId})`);
    expect(await client.imports.list({ experimentId })).toHaveLength(1);
  });

  it('draws a bar over one line on a terminal, names the dataset as asked, and lists the imports', async () => {
    // The service's clock stands still in tests: a second later, so the list's order (oldest first) is the imports' order.
    t.clock.advance(1000);
    const out = await sortie(['import', DATAFLASH, '--experiment', 'log day', '--name', 'dive 3', '--format', 'dataflash'], { stderrTTY: true });
    expect(out.code, out.stderr).toBe(0);
    expect(out.stderr).toContain('\r\u001b[2Kupload  [');
    expect(out.stderr).toMatch(/\r\u001b\[2Kimport {2}\[#+\] 100% .* messages {2}ETA 0:00\n$/);
    expect(out.stdout).toMatch(/^name +dive 3$/m);
    expect(out.stdout).toMatch(/^format +dataflash$/m);

    const listed = await sortie(['imports', '--experiment', 'log day']);
    expect(listed.code).toBe(0);
    const rows = listed.stdout.trim().split('\n');
    expect(rows[0]).toMatch(/^DATASET\s+NAME\s+FORMAT\s+FILE\s+SIZE\s+MESSAGES\s+FLIGHT START\s+IMPORTED$/);
    expect(rows.slice(1).map((r) => r.split(/\s{2,}/).slice(1, 4))).toEqual([
      ['sample_log_small', 'ulog', 'sample_log_small.ulg'],
      ['dive 3', 'dataflash', 'ardusub-small.BIN'],
    ]);
    const everywhere = JSON.parse((await sortie(['imports', '--json'])).stdout);
    expect(everywhere.map((i: { format: string }) => i.format)).toEqual(['ulog', 'dataflash']);
    const one = JSON.parse((await sortie(['imports', '--dataset', 'dive 3', '--json'])).stdout);
    expect(one).toHaveLength(1);
  });

  it("a file that is no log: the server's message, exit 1, nothing made", async () => {
    const notes = path.join(workDir, 'notes.txt');
    await writeFile(notes, 'flight notes: wind 5 kt from the west\n');
    const out = await sortie(['import', notes, '--experiment', experimentId]);
    expect(out.code).toBe(1);
    expect(out.stderr).toMatch(/^sortie import: 400 invalid_request: the file is not a log Sortie can import \(it starts with 66 6c 69 67/m);
    expect(out.stderr).toMatch(/\n {2}body: is not a ULog, DataFlash, tlog or MAVLink file\n$/);
    expect(await client.imports.list({ experimentId })).toHaveLength(2);
  });

  it('refuses bad usage before sending anything', async () => {
    const noExperiment = await sortie(['import', ULOG]);
    expect([noExperiment.code, noExperiment.stderr]).toEqual([2, 'sortie import: give --experiment ID or NAME: the experiment the new dataset joins (sortie experiments lists them)\n']);
    expect((await sortie(['import', ULOG, '--experiment', experimentId, '--format', 'px4'])).stderr).toContain('--format is one of ulog, dataflash, tlog, mavlink, not "px4"');
    expect((await sortie(['import', ULOG, '--experiment', experimentId, '--start', 'noon'])).code).toBe(2);
    const missing = await sortie(['import', path.join(workDir, 'nope.ulg'), '--experiment', experimentId]);
    expect([missing.code, missing.stderr]).toEqual([2, `sortie import: cannot read ${path.join(workDir, 'nope.ulg')}: no such file\n`]);
    const unknown = await sortie(['import', ULOG, '--experiment', 'no such day']);
    expect([unknown.code, unknown.stderr]).toEqual([1, 'sortie import: no experiment "no such day" in this key\'s organization (sortie experiments lists them)\n']);
  });
});

describe('sortie params', () => {
  it("a MAVLink flight's parameters from its PARAM_VALUE frames: initial, changes, final; --changed", async () => {
    await mavlinkFlight('hover 1', { MPC_XY_P: 0.95, MPC_Z_P: 1, NAV_RCL_ACT: 2 }, [[4, 'MPC_XY_P', 1.1], [6, 'MPC_XY_P', 1.2]]);
    const out = await sortie(['params', 'hover 1']);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toBe(
      [
        'NAME         INITIAL  CHANGES      FINAL',
        'MPC_XY_P     0.95     2: 1.1, 1.2  1.2',
        'MPC_Z_P      1        -            1',
        'NAV_RCL_ACT  2        -            2',
        '',
      ].join('\n'),
    );
    expect(out.stderr).toBe("3 parameters of hover 1 from the flight's PARAM_VALUE messages, 1 changed during the flight\n");
    const changed = await sortie(['params', 'hover 1', '--changed']);
    expect(changed.stdout.trim().split('\n')).toHaveLength(2);
    const asJson = JSON.parse((await sortie(['params', 'hover 1', '--json'])).stdout);
    expect(asJson.source).toBe('mavlink');
    expect(asJson.parameters[0]).toMatchObject({ name: 'MPC_XY_P', changes: [{ timestamp: '2026-05-02T09:00:04.500Z' }, { timestamp: '2026-05-02T09:00:06.500Z' }] });
    expect(asJson.parameters[0].changes.map((c: { value: number }) => Math.fround(c.value))).toEqual([Math.fround(1.1), Math.fround(1.2)]);
  });

  it("an imported log's parameters, by dataset id", async () => {
    const { datasetId } = (await client.imports.list({ experimentId }))[0]!;
    const out = await sortie(['params', datasetId]);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout.split('\n')[0]).toMatch(/^NAME\s+INITIAL\s+CHANGES\s+FINAL$/);
    expect(out.stdout.trim().split('\n').length).toBeGreaterThan(100);
    expect(out.stderr).toMatch(/^\d+ parameters of sample_log_small from the log, \d+ changed during the flight\n$/);
  });

  it('diff: added, removed and changed parameters with their values, and a summary; --at final', async () => {
    await mavlinkFlight('hover 2', { MPC_XY_P: 1.2, MPC_Z_P: 1, MPC_TILTMAX: 35 }, [[5, 'MPC_Z_P', 0.8]]);
    const initial = await sortie(['params', 'diff', 'hover 1', 'hover 2']);
    expect(initial.code, initial.stderr).toBe(0);
    expect(initial.stdout).toBe(
      [
        'CHANGE   NAME         A     B',
        'added    MPC_TILTMAX  -     35',
        'removed  NAV_RCL_ACT  2     -',
        'changed  MPC_XY_P     0.95  1.2',
        '1 added, 1 removed, 1 changed, 1 the same, as the flights started (A hover 1, B hover 2)',
        '',
      ].join('\n'),
    );
    // As they ended: hover 1 tuned MPC_XY_P up to hover 2's value, and hover 2 lowered MPC_Z_P.
    const final = await sortie(['params', 'diff', 'hover 1', 'hover 2', '--at', 'final']);
    expect(final.stdout).toMatch(/^changed  MPC_Z_P      1  0\.8$/m);
    expect(final.stdout).toMatch(/1 added, 1 removed, 1 changed, 1 the same, as the flights ended/);
    const asJson = JSON.parse((await sortie(['params', 'diff', 'hover 1', 'hover 1', '--json'])).stdout);
    expect(asJson).toMatchObject({ at: 'initial', added: [], removed: [], changed: [], unchanged: 3 });
    expect((await sortie(['params', 'diff', 'hover 1', 'hover 1'])).stdout).toBe('0 added, 0 removed, 0 changed, 3 the same, as the flights started (A hover 1, B hover 1)\n');
    expect((await sortie(['params', 'diff', 'hover 1', 'hover 2', '--at', 'end'])).stderr).toBe('sortie params diff: --at is initial or final, not "end"\n');
  });

  it('a name two flights share is refused with their ids; an unknown one is exit 1', async () => {
    const a = await mavlinkFlight('twin', { A: 1 });
    const other = (await client.experiments.create({ name: 'other day' })).id;
    const b = (await client.datasets.register({ experimentId: other, datasetName: 'twin', storageShape: 'narrow', codec: 'mavlink', dialect: 'ardupilotmega', format: 'mavlink-raw-v1' })).datasetId;
    const out = await sortie(['params', 'twin']);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain('2 datasets are named "twin": give one\'s id: ');
    expect(out.stderr).toContain(`${a} (experiment log day)`);
    expect(out.stderr).toContain(`${b} (experiment other day)`);
    expect((await sortie(['params', a])).code).toBe(0);
    const unknown = await sortie(['params', 'nothing like it']);
    expect([unknown.code, unknown.stderr]).toEqual([1, 'sortie params: no dataset "nothing like it" in this key\'s organization (sortie datasets lists them)\n']);
  });
});
