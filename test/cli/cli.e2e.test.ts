import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { promisify } from 'node:util';
import { McapStreamReader } from '@mcap/core';
import { run } from '@sortie/cli';
import { createSortieClient } from '@sortie/client';
import { CommandDispatchedBodySchema } from '@sortie/contracts';
import { RECEIVER_HOST, startDeliveryFixture, startHttpsReceiver, type DeliveryFixture, type TestOrg, type TestReceiver } from '@sortie/cloud/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Every `sortie` command against the real service (PostgreSQL, the in-process delivery queue, an HTTPS
// receiver with a certificate made for this run). Most run through `run`, the very function the bin
// calls; a few through the bin itself, to check the shim, the environment and the exit status.
let f: DeliveryFixture;
let org: TestOrg;
let receiver: TestReceiver;
let endpointId: string;
let experimentId: string;
let datasetId: string;
let workDir: string;
/** How the receiver answers the next delivery: ack, nack, or only 200. */
let mode: 'ack' | 'nack' | 'ok' = 'ack';

const repo = path.resolve(import.meta.dirname, '..', '..');

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout as bytes (an MCAP file is not text). */
  bytes?: Buffer;
}

class Capture extends PassThrough {
  readonly chunks: Buffer[] = [];
  isTTY: boolean;
  constructor(isTTY = false) {
    super();
    this.isTTY = isTTY;
    this.on('data', (chunk: Buffer) => this.chunks.push(Buffer.from(chunk)));
  }
  get bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }
  get text(): string {
    return this.bytes.toString();
  }
}

async function sortie(args: string[], options: { key?: string; stderrTTY?: boolean } = {}): Promise<Outcome> {
  const stdout = new Capture();
  const stderr = new Capture(options.stderrTTY);
  const code = await run(args, { env: { SORTIE_URL: f.t.url, SORTIE_API_KEY: options.key ?? org.key }, stdout, stderr });
  return { code, stdout: stdout.text, stderr: stderr.text, bytes: stdout.bytes };
}

async function sortieBin(args: string[], env: Record<string, string>): Promise<Outcome> {
  try {
    const { stdout, stderr } = await promisify(execFile)(path.join(repo, 'node_modules', '.bin', 'sortie'), args, {
      cwd: workDir,
      env: { PATH: `${path.join(repo, 'node_modules', '.bin')}:${process.env.PATH}`, ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

beforeAll(async () => {
  f = await startDeliveryFixture({ queue: 'memory' });
  org = await f.t.createOrg('cli e2e');
  workDir = await mkdtemp(path.join(tmpdir(), 'sortie-cli-'));
  receiver = await startHttpsReceiver(f.cert);
  // A receiver as a customer writes one: answer 2xx at once, then act and acknowledge with the token.
  const client = createSortieClient({ baseUrl: f.t.url });
  receiver.answer((req) => {
    const parsed = CommandDispatchedBodySchema.safeParse(JSON.parse(req.rawBody.toString()));
    if (parsed.success && mode !== 'ok') {
      const body = parsed.data;
      setTimeout(() => {
        void client.commands.ack(
          { commandId: body.command.id, state: mode === 'ack' ? 'acked' : 'nacked', vehicleTime: '2026-01-01T00:00:05Z', detail: `${mode} by the test receiver` },
          { ackToken: body.ack.token },
        );
      }, 300);
    }
    return { status: 200, body: 'ok' };
  });
  const experiment = await createSortieClient({ baseUrl: f.t.url, apiKey: org.key }).experiments.create({ name: 'cli flight' });
  experimentId = experiment.id;
  const client2 = createSortieClient({ baseUrl: f.t.url, apiKey: org.key });
  const dataset = await client2.datasets.register({ experimentId, datasetName: 'vehicle', channels: [{ name: 'altitude', unit: 'm' }, { name: 'mode', dataType: 'string' }] });
  datasetId = dataset.datasetId;
  await client2.datasets.append({
    experimentId,
    datasetId,
    rows: Array.from({ length: 50 }, (_, i) => ({ timestamp: new Date(Date.UTC(2026, 0, 1) + i * 100).toISOString(), values: { altitude: i, mode: i < 25 ? 'climb' : 'cruise' } })),
  });
  await client2.events.create({ experimentId, datasetId, events: [{ timestamp: '2026-01-01T00:00:01Z', kind: 'TAKEOFF', message: 'wheels up' }] });
});

afterAll(async () => {
  await receiver?.close();
  await f?.stop();
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

describe('listings', () => {
  it('experiments and datasets as tables and as JSON', async () => {
    const table = await sortie(['experiments']);
    expect(table.code).toBe(0);
    expect(table.stdout.split('\n')[0]).toMatch(/^ID\s+NAME\s+DATASETS\s+CREATED$/);
    expect(table.stdout).toMatch(new RegExp(`${experimentId}\\s+cli flight\\s+1\\s`));
    const asJson = await sortie(['experiments', '--json']);
    expect(JSON.parse(asJson.stdout).map((e: { id: string }) => e.id)).toEqual([experimentId]);
    const datasets = await sortie(['datasets', '--experiment', experimentId]);
    expect(datasets.stdout).toMatch(new RegExp(`${datasetId}\\s+vehicle\\s+wide\\s+cli flight`));
    expect(JSON.parse((await sortie(['datasets', '--json'])).stdout)).toHaveLength(1);
  });

  it('channels and events of a dataset', async () => {
    const channels = await sortie(['channels', datasetId]);
    expect(channels.stdout.trim().split('\n').slice(1).map((l) => l.split(/\s+/))).toEqual([
      ['altitude', 'm', 'double', 'ch_0'],
      ['mode', '-', 'string', 'ch_1'],
    ]);
    const events = await sortie(['events', datasetId, '--kind', 'TAKEOFF', '--json']);
    expect(JSON.parse(events.stdout).map((e: { kind: string; message: string }) => [e.kind, e.message])).toEqual([['TAKEOFF', 'wheels up']]);
    expect((await sortie(['events', datasetId])).stdout).toMatch(/2026-01-01T00:00:01.000Z\s+TAKEOFF\s+wheels up/);
  });
});

describe('query', () => {
  it('a window of a channel as a table, CSV and JSON, equal to the rows written', async () => {
    const window = ['--channel', 'altitude', '--start', '2026-01-01T00:00:01Z', '--end', '2026-01-01T00:00:02Z'];
    const csv = await sortie(['query', datasetId, ...window, '--format', 'csv']);
    expect(csv.stderr).toBe("");
    expect(csv.code).toBe(0);
    const lines = csv.stdout.trim().split('\n');
    expect(lines[0]).toBe('channel,time,value');
    expect(lines.slice(1)).toEqual(Array.from({ length: 10 }, (_, i) => `altitude,2026-01-01T00:00:01.${String(i * 100).padStart(3, '0')}000Z,${10 + i}`));
    const asJson = JSON.parse((await sortie(['query', datasetId, ...window, '--json'])).stdout);
    expect(asJson).toMatchObject({ totalRawPoints: 10, series: [{ channel: 'altitude', address: 'ch_0', rawPoints: 10 }] });
    const table = await sortie(['query', datasetId, ...window]);
    expect(table.stdout.split('\n')[1]).toMatch(/^altitude\s+2026-01-01T00:00:01.000000Z\s+10$/);
    expect(table.stderr).toBe('10 points shown of 10 raw points in the window\n');
  });

  it('without --channel, every numeric channel (the text channel is left out)', async () => {
    const all = JSON.parse((await sortie(['query', datasetId, '--json'])).stdout);
    expect(all.series.map((s: { channel: string; rawPoints: number }) => [s.channel, s.rawPoints])).toEqual([['altitude', 50]]);
  });

  it('a channel the dataset lacks, or a time that is not RFC 3339, is a usage error (2)', async () => {
    const unknown = await sortie(['query', datasetId, '--channel', 'airspeed']);
    expect([unknown.code, unknown.stderr]).toEqual([2, expect.stringContaining('--channel airspeed: the dataset has no such channel')]);
    const badTime = await sortie(['query', datasetId, '--start', 'yesterday']);
    expect([badTime.code, badTime.stderr]).toEqual([2, expect.stringContaining('--start must be an RFC 3339 time')]);
  });
});

describe('webhooks and commands', () => {
  it('webhooks create, list, rotate, test', async () => {
    const created = await sortie(['webhooks', 'create', `https://${RECEIVER_HOST}:${receiver.port}/hook`, '--label', 'bench receiver', '--json']);
    expect(created.code).toBe(0);
    const endpoint = JSON.parse(created.stdout);
    expect(endpoint.secret).toMatch(/^whsec_/);
    endpointId = endpoint.id;
    const listed = await sortie(['webhooks', 'list']);
    expect(listed.stdout).toMatch(new RegExp(`${endpointId}\\s+bench receiver\\s+https://${RECEIVER_HOST}:${receiver.port}/hook\\s+enabled`));
    const rotated = await sortie(['webhooks', 'rotate', endpointId, '--overlap', '60']);
    expect(rotated.stdout).toMatch(/^secret\s+whsec_\S+$/m);
    expect(rotated.stdout).toMatch(/^oldSecretValidUntil\s+20\d\d-/m);
    expect(rotated.stderr).toContain('shown only now');
    const before = receiver.requests.length;
    const tested = await sortie(['webhooks', 'test', endpointId]);
    expect([tested.code, tested.stdout]).toEqual([0, expect.stringMatching(/^status\s+200$/m)]);
    expect(JSON.parse(receiver.requests[before]!.rawBody.toString())).toMatchObject({ eventType: 'ping' });
  });

  it('webhooks delete; a second delete is the service\'s 404 (exit 1)', async () => {
    const spare = JSON.parse((await sortie(['webhooks', 'create', `https://${RECEIVER_HOST}:${receiver.port}/spare`, '--json'])).stdout);
    const deleted = await sortie(['webhooks', 'delete', spare.id]);
    expect([deleted.code, deleted.stdout]).toEqual([0, `deleted ${spare.id}\n`]);
    expect((await sortie(['webhooks', 'list'])).stdout).not.toContain(spare.id);
    const again = await sortie(['webhooks', 'delete', spare.id]);
    expect([again.code, again.stderr]).toEqual([1, expect.stringContaining('404 not_found')]);
  });

  it('commands create, list, arm, dispatch, watch until acked, deliveries', async () => {
    mode = 'ack';
    const created = await sortie(['commands', 'create', datasetId, 'RTL', '--args', '{"altitude":30}', '--rel-time', '12.5']);
    expect(created.code).toBe(0);
    const commandId = /^id\s+(\S+)$/m.exec(created.stdout)![1]!;
    expect(created.stdout).toMatch(/^status\s+logged$/m);
    const listed = await sortie(['commands', 'list', datasetId]);
    expect(listed.stdout).toMatch(new RegExp(`${commandId}\\s+12.5\\s+RTL\\s+logged`));
    // Not armed yet: the service's 409 is exit 1 with its message.
    const early = await sortie(['commands', 'dispatch', commandId]);
    expect([early.code, early.stderr]).toEqual([1, expect.stringMatching(/409 conflict: .*arm/i)]);
    const armed = await sortie(['commands', 'arm', datasetId, '--ttl', '600', '--reason', 'cli test']);
    expect(armed.stdout).toMatch(/^armed\s+true$/m);
    const dispatched = await sortie(['commands', 'dispatch', commandId, '--ack-timeout', '30']);
    expect([dispatched.code, dispatched.stdout]).toEqual([0, expect.stringMatching(/^status\s+queued$/m)]);
    const watched = await sortie(['commands', 'watch', commandId, '--timeout', '30']);
    expect(watched.code).toBe(0);
    expect(watched.stdout).toMatch(/Z {2}acked: ack by the test receiver\n/);
    expect(watched.stdout).toMatch(/^vehicleTime\s+2026-01-01T00:00:05.000Z$/m);
    const deliveries = await sortie(['deliveries', commandId, '--json']);
    expect(JSON.parse(deliveries.stdout).map((a: { statusCode: number; endpointId: string }) => [a.statusCode, a.endpointId])).toEqual([[200, endpointId]]);
    expect((await sortie(['deliveries', commandId])).stdout).toMatch(/\s1\s+https:\/\/receiver\.test:\d+\/hook\s+200\s/);
  });

  it('watch of a command that is nacked exits 5; retract; disarm', async () => {
    mode = 'nack';
    const created = JSON.parse((await sortie(['commands', 'create', datasetId, 'LAND', '--json'])).stdout);
    await sortie(['commands', 'dispatch', created.id]);
    const watched = await sortie(['commands', 'watch', created.id, '--json', '--timeout', '30']);
    expect(watched.code).toBe(5);
    expect(JSON.parse(watched.stdout)).toMatchObject({ id: created.id, status: 'nacked' });
    const other = JSON.parse((await sortie(['commands', 'create', datasetId, 'LOITER', '--json'])).stdout);
    const retracted = await sortie(['commands', 'retract', other.id, '--reason', 'not needed']);
    expect(retracted.stdout).toMatch(/^retractedAt\s+20/m);
    expect((await sortie(['commands', 'disarm', datasetId])).stdout).toMatch(/^armed\s+false$/m);
  });

  it('a logged command never dispatched: watch gives up after --timeout with exit 1', async () => {
    const created = JSON.parse((await sortie(['commands', 'create', datasetId, 'HOLD', '--json'])).stdout);
    const watched = await sortie(['commands', 'watch', created.id, '--timeout', '1']);
    expect([watched.code, watched.stderr]).toEqual([1, expect.stringContaining('still logged after 1 s')]);
  });

  it('watch reads the command by id: commands:read is enough, with no dataset search', async () => {
    const created = JSON.parse((await sortie(['commands', 'create', datasetId, 'YAW', '--json'])).stdout);
    // Without datasets:read the experiment list is refused, so a search across datasets could not run.
    const commandsOnly = (await org.keyWith(['commands:read'])).apiKey;
    expect((await sortie(['experiments'], { key: commandsOnly })).code).toBe(4);
    const watched = await sortie(['commands', 'watch', created.id, '--json', '--timeout', '1'], { key: commandsOnly });
    expect([watched.code, JSON.parse(watched.stdout)]).toEqual([1, expect.objectContaining({ id: created.id, status: 'logged' })]);
  });

  it("watch of a missing id or another organization's command is the service's 404 (exit 1); a malformed id is never sent (exit 2)", async () => {
    const mine = JSON.parse((await sortie(['commands', 'create', datasetId, 'SPIN', '--json'])).stdout);
    const stranger = await f.t.createOrg('cli stranger');
    const crossed = await sortie(['commands', 'watch', mine.id, '--timeout', '1'], { key: stranger.key });
    expect([crossed.code, crossed.stderr]).toEqual([1, expect.stringContaining(`404 not_found: no command ${mine.id}`)]);
    const missing = crypto.randomUUID();
    const gone = await sortie(['commands', 'watch', missing, '--timeout', '1']);
    expect([gone.code, gone.stderr]).toEqual([1, expect.stringContaining(`404 not_found: no command ${missing}`)]);
    const malformed = await sortie(['commands', 'watch', 'not-a-uuid']);
    expect([malformed.code, malformed.stderr]).toEqual([2, expect.stringContaining('commandId')]);
  });
});

describe('export', () => {
  it('CSV to a file named by the server, with a progress bar on a terminal', async () => {
    const out = path.join(workDir, 'flight.csv');
    const exported = await sortie(['export', datasetId, '--format', 'csv', '--output', out], { stderrTTY: true });
    expect(exported.code).toBe(0);
    expect(exported.stdout).toMatch(/^wrote .*flight\.csv \(csv, .*, 50 rows\)\n$/);
    expect(exported.stderr).toMatch(/\[#{24}\] 100% .* at .*\/s {2}50 rows {2}ETA /);
    const csv = (await readFile(out, 'utf8')).trim().split('\n');
    expect(csv[0]).toBe('time,time_unix_us,altitude,mode');
    expect(csv).toHaveLength(51);
    expect(csv[1]).toBe(`2026-01-01T00:00:00.000000Z,${Date.UTC(2026, 0, 1) * 1000},0,climb`);
    await expect(stat(`${out}.partial`)).rejects.toThrow();
  });

  it('a format that is neither csv nor mcap is a usage error, and nothing is written', async () => {
    const exported = await sortie(['export', datasetId, '--format', 'parquet']);
    expect([exported.code, exported.stderr]).toEqual([2, expect.stringContaining('--format must be csv or mcap')]);
  });

  it('MCAP to stdout with -o -', async () => {
    const exported = await sortie(['export', datasetId, '--format', 'mcap', '-o', '-'], { stderrTTY: true });
    expect(exported.code).toBe(0);
    // The bar follows the MCAP records as they stream by: 50 rows and the event.
    expect(exported.stderr).toMatch(/\] 100% .* 51 messages {2}ETA /);
    expect(exported.bytes!.subarray(0, 8)).toEqual(Buffer.from([0x89, ...Buffer.from('MCAP0\r\n')]));
    // Read back: one message per row on /rows, the values written, log time = sample time.
    const reader = new McapStreamReader();
    reader.append(new Uint8Array(exported.bytes!));
    const topics = new Map<number, string>();
    const rows: { topic: string; logTime: bigint; data: unknown }[] = [];
    for (let record; (record = reader.nextRecord()); ) {
      if (record.type === 'Channel') topics.set(record.id, record.topic);
      if (record.type === 'Message') rows.push({ topic: topics.get(record.channelId)!, logTime: record.logTime, data: JSON.parse(new TextDecoder().decode(record.data)) });
    }
    expect(reader.done()).toBe(true);
    const onRows = rows.filter((r) => r.topic === '/rows');
    expect(onRows).toHaveLength(50);
    expect(onRows[3]).toEqual({ topic: '/rows', logTime: BigInt(Date.UTC(2026, 0, 1) + 300) * 1_000_000n, data: { altitude: 3, mode: 'climb' } });
    expect(rows.filter((r) => r.topic === '/events')).toHaveLength(1);
  });
});

describe('errors and the bin', () => {
  it('no key is a usage error; an unknown key is 4; an unreachable service is 3; a bad flag is 2', async () => {
    const noKey = await sortieBin(['experiments'], { SORTIE_URL: f.t.url });
    expect([noKey.code, noKey.stderr]).toEqual([2, expect.stringContaining('no API key')]);
    const badKey = await sortieBin(['experiments'], { SORTIE_URL: f.t.url, SORTIE_API_KEY: 'sk_live_nope' });
    expect([badKey.code, badKey.stderr]).toEqual([4, expect.stringMatching(/401 unauthorized: .*\(request id req_[0-9a-f]{32}\)/)]);
    const away = await sortieBin(['experiments', '--url', 'http://127.0.0.1:1'], { SORTIE_API_KEY: org.key });
    expect([away.code, away.stderr]).toEqual([3, expect.stringContaining('cannot reach the service')]);
    const badFlag = await sortie(['experiments', '--colour']);
    expect([badFlag.code, badFlag.stderr]).toEqual([2, expect.stringContaining("Unknown option '--colour'")]);
    const unknown = await sortie(['fly']);
    expect([unknown.code, unknown.stderr]).toEqual([2, expect.stringContaining('unknown command "fly"')]);
    const invalid = await sortie(['channels', 'not-a-uuid']);
    expect([invalid.code, invalid.stderr]).toEqual([2, expect.stringContaining('datasetId:')]);
  });

  it('the bin with --url and --key flags, and --help', async () => {
    // Flags may come before the command: their values are not taken for command words.
    const listed = await sortieBin(['--url', f.t.url, '--key', org.key, 'datasets', '--json'], {});
    expect([listed.code, JSON.parse(listed.stdout).map((d: { id: string }) => d.id)]).toEqual([0, [datasetId]]);
    const help = await sortieBin(['--help'], {});
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('sortie commands watch <commandId>');
    expect(help.stdout).toContain('Exit codes: 0 done');
    // A Node that cannot run TypeScript (Node 20 on PATH; here Node 24 with type stripping off) hands over
    // to the project's Node instead of failing on the .ts import.
    const oldNode = await promisify(execFile)(process.execPath, ['--no-experimental-strip-types', path.join(repo, 'cli', 'bin', 'sortie.js'), 'datasets', '--json'], {
      env: { SORTIE_URL: f.t.url, SORTIE_API_KEY: org.key },
    });
    expect(JSON.parse(oldNode.stdout).map((d: { id: string }) => d.id)).toEqual([datasetId]);
    const flagsAround = await sortie(['--key', 'commands', 'commands', 'list', datasetId, '--json']);
    expect([flagsAround.code, flagsAround.stderr]).toEqual([4, expect.stringContaining('401 unauthorized')]);
  });
});

// Last: it appends rows and a limit rule, which the tests above do not expect.
describe('follow', () => {
  it('prints the latest value as each batch arrives, and a limit crossing as it starts and ends', async () => {
    const client = createSortieClient({ baseUrl: f.t.url, apiKey: org.key });
    await client.limits.create({ experimentId, datasetId, name: 'ceiling', signal: '0', condition: 'above', high: 100, severity: 'critical' });
    const following = sortie(['follow', datasetId, '--channel', 'altitude', '--for', '4']);
    // After the stream has opened: three batches, the second above the ceiling, the third back under it.
    await new Promise((r) => setTimeout(r, 800));
    for (const [i, altitude] of [[60, 70], [61, 130], [62, 80]] as const) {
      await client.datasets.append({ experimentId, datasetId, rows: [{ timestamp: new Date(Date.UTC(2026, 0, 1) + i * 100).toISOString(), values: { altitude } }] });
      await new Promise((r) => setTimeout(r, 400));
    }
    const out = await following;
    expect(out.code).toBe(0);
    expect(out.stderr).toContain(`following 1 channel of ${datasetId} for 4 s`);
    const lines = out.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^TIME\s+WHAT\s+VALUE$/);
    // The opening window's latest value, then each update's latest: 130 and 80 fall in one slice of the
    // one-minute window's budget, so 130 travels with 80 in one update, whose latest is 80.
    const values = lines.map((l) => l.split(/\s+/)).filter((cells) => cells[1] === 'altitude').map((cells) => cells[2]);
    expect(values[0]).toBe('49');
    expect(values.at(-1)).toBe('80');
    expect(values).toContain('70');
    expect(lines.some((l) => /2026-01-01T00:00:06.100000Z\s+LIMIT\s+LIMIT CRITICAL CROSSED: .*above 100.*, worst 130/.test(l))).toBe(true);
    expect(lines.some((l) => /LIMIT CRITICAL ended/.test(l))).toBe(true);
  });

  it('--json prints one object per update', async () => {
    const out = await sortie(['follow', datasetId, '--channel', 'altitude', '--for', '1', '--json']);
    expect(out.code).toBe(0);
    const first = JSON.parse(out.stdout.trim().split('\n')[0]!);
    expect(first).toMatchObject({ reset: true, latest: { altitude: { value: 80, time: '2026-01-01T00:00:06.200Z', rawPoints: expect.any(Number) } }, dropped: 0 });
  });
});
