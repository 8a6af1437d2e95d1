import { spawn } from 'node:child_process';
import path from 'node:path';
import { createSortieClient, SortieApiError } from '@sortie/client';
import { createStreamSubmitClient } from '@sortie/client/node';
import { startTestService, type TestOrg, type TestService } from '@sortie/cloud/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The typed client against the real service (PostgreSQL), through its package entries only.
let t: TestService;
let org: TestOrg;

beforeAll(async () => {
  t = await startTestService();
  org = await t.createOrg('client e2e');
});
afterAll(async () => {
  await t?.stop();
});

const ts = (iso: string) => {
  const ms = Date.parse(iso);
  return { seconds: BigInt(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1e6 };
};

async function wideDataset(client: ReturnType<typeof createSortieClient>, name: string) {
  const experiment = await client.experiments.create({ name });
  const dataset = await client.datasets.register({
    experimentId: experiment.id,
    datasetName: 'bench',
    channels: [{ name: 'altitude', unit: 'm' }, { name: 'speed', unit: 'm/s' }],
  });
  return { experimentId: experiment.id, datasetId: dataset.datasetId };
}

describe('HTTP methods from the route table', () => {
  it('create, list, append, events, commands: answers parsed by the contract', async () => {
    const client = createSortieClient({ baseUrl: t.url, apiKey: org.key });
    const { experimentId, datasetId } = await wideDataset(client, 'client e2e: round trip');
    const appended = await client.datasets.append({
      experimentId,
      datasetId,
      rows: [
        { timestamp: '2026-01-01T00:00:00Z', values: { altitude: 10, speed: 1 } },
        { timestamp: '2026-01-01T00:00:01Z', values: { altitude: 11 } },
      ],
    });
    expect(appended).toEqual({ rowsWritten: 2, valuesWritten: 3, ignoredKeys: [] });
    const channels = await client.channels.list({ datasetId });
    expect(channels.map((c) => [c.name, c.hypertableColName])).toEqual([['altitude', 'ch_0'], ['speed', 'ch_1']]);
    await client.events.create({ experimentId, datasetId, events: [{ timestamp: '2026-01-01T00:00:00.5Z', kind: 'TAKEOFF' }] });
    const events = await client.events.list({ datasetId, kind: 'TAKEOFF' });
    expect(events.map((e) => [e.kind, e.timestamp])).toEqual([['TAKEOFF', '2026-01-01T00:00:00.500Z']]);
    const listed = await client.experiments.list();
    expect(listed.find((e) => e.id === experimentId)?.datasets.map((d) => d.id)).toEqual([datasetId]);
    const command = await client.commands.create({ experimentId, datasetId, commandText: 'LAND', relTime: 12.5 });
    expect(command).toMatchObject({ commandText: 'LAND', status: 'logged', duplicate: false });
    expect((await client.commands.list({ experimentId, datasetId })).map((c) => c.id)).toEqual([command.id]);
  });

  it('a refused call is a SortieApiError with the envelope and the request id the service answered', async () => {
    const client = createSortieClient({ baseUrl: t.url, apiKey: org.key });
    const missing = await client.channels.list({ datasetId: '00000000-0000-4000-8000-000000000000' }, { requestId: 'client-e2e-404' }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(SortieApiError);
    expect(missing).toMatchObject({ status: 404, code: 'not_found', requestId: 'client-e2e-404' });

    const stranger = createSortieClient({ baseUrl: t.url, apiKey: 'sk_live_not_a_key' });
    const unauthorized = (await stranger.experiments.list().catch((e: unknown) => e)) as SortieApiError;
    expect([unauthorized.status, unauthorized.code]).toEqual([401, 'unauthorized']);
    expect(unauthorized.requestId).toMatch(/^req_[0-9a-f]{32}$/);

    const readOnly = await org.keyWith(['datasets:read']);
    const narrow = createSortieClient({ baseUrl: t.url, apiKey: readOnly.apiKey });
    await expect(narrow.experiments.create({ name: 'x' })).rejects.toMatchObject({ status: 403, code: 'insufficient_scope' });
  });

  it('the service validates what the client cannot know: a value that does not fit its column', async () => {
    const client = createSortieClient({ baseUrl: t.url, apiKey: org.key });
    const { experimentId, datasetId } = await wideDataset(client, 'client e2e: server-side details');
    const error = (await client.datasets
      .append({ experimentId, datasetId, rows: [{ timestamp: '2026-01-01T00:00:00Z', values: { altitude: 'high' } }] })
      .catch((e: unknown) => e)) as SortieApiError;
    expect([error.status, error.code]).toEqual([400, 'invalid_request']);
    expect(error.details.map((d) => d.field)).toEqual(['rows[0].values.altitude']);
  });

  it('an input the contract refuses is never sent: status 0, the same field paths as the service', async () => {
    const seen: string[] = [];
    const client = createSortieClient({
      baseUrl: t.url,
      apiKey: org.key,
      fetch: async (input, init) => {
        seen.push(String(input));
        return await fetch(input, init);
      },
    });
    const error = (await client.datasets
      .append({ experimentId: 'nope', datasetId: '00000000-0000-4000-8000-000000000000', rows: [{ timestamp: 'yesterday', values: {} }] })
      .catch((e: unknown) => e)) as SortieApiError;
    expect(error).toBeInstanceOf(SortieApiError);
    expect([error.status, error.code]).toEqual([0, 'invalid_request']);
    expect(error.details.map((d) => d.field)).toEqual(['experimentId', 'rows[0].timestamp']);
    // The service answers the same body with the same fields.
    const server = await t.call('POST', '/api/datasets/append', {
      key: org.key,
      body: { experimentId: 'nope', datasetId: '00000000-0000-4000-8000-000000000000', rows: [{ timestamp: 'yesterday', values: {} }] },
    });
    expect(server.body.error.details.map((d: { field: string }) => d.field)).toEqual(['experimentId', 'rows[0].timestamp']);
    expect(seen).toEqual([]);
  });

  it('request ids: sent, echoed, and told for every call', async () => {
    const told: { operationId: string; status: number; requestId: string | undefined }[] = [];
    const client = createSortieClient({ baseUrl: t.url, apiKey: org.key, onResponse: (info) => told.push(info) });
    const result = await client.request('listExperiments', undefined, { requestId: 'mine-1' });
    expect([result.status, result.requestId, result.headers.get('x-request-id')]).toEqual([200, 'mine-1', 'mine-1']);
    await client.webhooks.list();
    expect(told.map((i) => i.operationId)).toEqual(['listExperiments', 'listWebhooks']);
    expect(told[1]!.requestId).toMatch(/^req_[0-9a-f]{32}$/);
  });

  it('an answer that is not the contract is bad_response, not a silent wrong value', async () => {
    const client = createSortieClient({
      baseUrl: t.url,
      apiKey: org.key,
      fetch: async () => new Response(JSON.stringify([{ id: 'not-a-uuid' }]), { status: 200, headers: { 'x-request-id': 'proxy-1' } }),
    });
    await expect(client.experiments.list()).rejects.toMatchObject({ code: 'bad_response', status: 200, requestId: 'proxy-1' });
    const html = createSortieClient({ baseUrl: t.url, fetch: async () => new Response('<h1>Bad gateway</h1>', { status: 502 }) });
    await expect(html.experiments.list()).rejects.toMatchObject({ code: 'http_error', status: 502 });
  });
});

describe('telemetry', () => {
  it('Submit and Query over Connect on the HTTP port, errors with the service code', async () => {
    const client = createSortieClient({ baseUrl: t.url, apiKey: org.key });
    const { experimentId, datasetId } = await wideDataset(client, 'client e2e: telemetry');
    const submitted = await client.telemetry.submit({
      experimentId,
      datasetId,
      points: [0, 1, 2].map((i) => ({ timestamp: ts(`2026-01-01T00:00:0${i}Z`), channelId: '0', type: { case: 'double' as const, value: 100 + i } })),
    });
    expect(submitted).toEqual({ accepted: 3, written: 3, ignored: 0, ignoredChannelIds: [] });
    const answer = await client.telemetry.query({ experimentId, datasetId, channelIds: ['0'] });
    expect(answer.series[0]!.points.map((p) => p.value)).toEqual([100, 101, 102]);
    expect(answer.totalRawPoints).toBe(3);
    expect(answer.series[0]!.timesUs).toBeUndefined();
    // As columns: the same samples as two arrays, and no points.
    const columns = await client.telemetry.query({ experimentId, datasetId, channelIds: ['0'], columns: true });
    const t0 = Date.parse('2026-01-01T00:00:00Z') * 1000;
    expect(columns.series[0]).toEqual({ channelId: '0', points: [], rawPoints: 3, timesUs: [t0, t0 + 1e6, t0 + 2e6], values: [100, 101, 102] });

    const error = (await client.telemetry.query({ experimentId, datasetId: '00000000-0000-4000-8000-000000000000', channelIds: ['0'] }, { requestId: 'rpc-404' }).catch((e: unknown) => e)) as SortieApiError;
    expect(error).toBeInstanceOf(SortieApiError);
    expect([error.status, error.code, error.requestId]).toEqual([404, 'not_found', 'rpc-404']);
    const stranger = createSortieClient({ baseUrl: t.url, apiKey: 'sk_live_not_a_key' });
    await expect(stranger.telemetry.query({ experimentId, datasetId, channelIds: ['0'] })).rejects.toMatchObject({ status: 401, code: 'unauthorized' });
  });

  it('StreamSubmit over gRPC from the Node entry, batches pulled from an async source', async () => {
    const client = createSortieClient({ baseUrl: t.url, apiKey: org.key });
    const { experimentId, datasetId } = await wideDataset(client, 'client e2e: stream');
    const stream = createStreamSubmitClient({ grpcUrl: t.service.grpcUrl, apiKey: org.key });
    async function* batches() {
      for (let b = 0; b < 5; b++) {
        yield { points: Array.from({ length: 200 }, (_, i) => ({ timestamp: { seconds: BigInt(1_767_225_600 + b * 200 + i), nanos: 0 }, channelId: '1', type: { case: 'double' as const, value: i } })) };
      }
    }
    const answer = await stream.streamSubmit({ experimentId, datasetId }, batches());
    expect(answer).toEqual({ accepted: 1000, written: 1000, ignored: 0, ignoredChannelIds: [], messages: 6, duplicates: 0 });
    expect(JSON.parse(JSON.stringify(answer))).toEqual(answer);
    const read = await client.telemetry.query({ experimentId, datasetId, channelIds: ['1'], maxPointsPerChannel: 5000 });
    expect(read.totalRawPoints).toBe(1000);
    const denied = await org.keyWith(['telemetry:read']);
    const refused = createStreamSubmitClient({ grpcUrl: t.service.grpcUrl, apiKey: denied.apiKey });
    await expect(refused.streamSubmit({ experimentId, datasetId }, [])).rejects.toMatchObject({ code: 'insufficient_scope', status: 403 });
  });
});

describe('telemetry answers are plain data', () => {
  it('JSON.stringify round-trips Query, Submit and Follow answers: times as RFC 3339 to the microsecond, counters as numbers', async () => {
    const client = createSortieClient({ baseUrl: t.url, apiKey: org.key });
    const { experimentId, datasetId } = await wideDataset(client, 'client e2e: plain');
    await client.datasets.append({
      experimentId,
      datasetId,
      rows: [
        { timestamp: '2026-01-01T00:00:00Z', values: { altitude: 1 } },
        { timestamp: '2026-01-01T00:00:00.25Z', values: { altitude: 2 } },
        { timestamp: '2026-01-01T00:00:00.250001Z', values: { altitude: 3 } },
      ],
    });
    const answer = await client.telemetry.query({ experimentId, datasetId, channelIds: ['0'] });
    expect(JSON.parse(JSON.stringify(answer))).toEqual(answer);
    // The form protobuf's JSON (and curl over Connect) writes: 0, 3, 6 or 9 fractional digits, microseconds kept.
    expect(answer).toEqual({
      series: [{ channelId: '0', rawPoints: 3, points: [
        { timestamp: '2026-01-01T00:00:00Z', value: 1 },
        { timestamp: '2026-01-01T00:00:00.250Z', value: 2 },
        { timestamp: '2026-01-01T00:00:00.250001Z', value: 3 },
      ] }],
      totalRawPoints: 3,
    });
    // An answer's time goes back in as it came: `from` and `to` take RFC 3339 text (or a Date).
    const later = await client.telemetry.query({ experimentId, datasetId, channelIds: ['0'], from: answer.series[0]!.points[1]!.timestamp, to: new Date('2026-01-01T00:00:01Z') });
    expect(later.series[0]!.points.map((p) => p.value)).toEqual([2, 3]);
    const bad = (await client.telemetry.query({ experimentId, datasetId, channelIds: ['0'], from: 'yesterday' }).catch((e: unknown) => e)) as SortieApiError;
    expect([bad.status, bad.code]).toEqual([0, 'invalid_request']);

    const abort = new AbortController();
    for await (const update of client.telemetry.follow({ datasetId, channelIds: ['0'], windowMs: 60_000 }, { signal: abort.signal })) {
      expect(JSON.parse(JSON.stringify(update))).toEqual(update);
      expect(update).toMatchObject({ reset: true, head: '2026-01-01T00:00:00.250001Z', dropped: 0, events: [], commands: [] });
      expect(update.series[0]!.rawPoints).toBe(3);
      abort.abort();
    }
  });
});

describe('the same client under Deno', () => {
  it('runs the script test/client/deno-client.ts in Deno against this service', async () => {
    const root = path.resolve(import.meta.dirname, '..', '..');
    const deno = path.join(root, 'node_modules', '.bin', 'deno');
    const child = spawn(deno, ['run', '--allow-net', '--allow-env', '--allow-read', path.join(root, 'test', 'client', 'deno-client.ts')], {
      cwd: root,
      env: { ...process.env, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1', SORTIE_URL: t.url, SORTIE_GRPC_URL: t.service.grpcUrl, SORTIE_API_KEY: org.key },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect({ code, stderr: code === 0 ? '' : stderr }).toEqual({ code: 0, stderr: '' });
    const report = JSON.parse(stdout.trim().split('\n').at(-1)!);
    expect(report).toEqual({
      runtime: 'deno',
      registered: true,
      appended: { rowsWritten: 2, valuesWritten: 2, ignoredKeys: [] },
      submitted: { accepted: 1, written: 1, ignored: 0, ignoredChannelIds: [] },
      streamed: { accepted: 1, written: 1, ignored: 0, ignoredChannelIds: [], messages: 2, duplicates: 0 },
      queried: [
        { timestamp: '2026-01-01T00:00:00Z', value: 1.5 },
        { timestamp: '2026-01-01T00:00:01Z', value: 2.5 },
        { timestamp: '2026-01-01T00:00:02Z', value: 3.5 },
        { timestamp: '2026-01-01T00:00:03Z', value: 4.5 },
      ],
      notFound: { status: 404, code: 'not_found' },
      invalidLocally: { status: 0, fields: ['name'] },
    });
  }, 60_000);
});
