import { spawnSync } from 'node:child_process';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { CommandDispatchedBodySchema, LimitCrossingBodySchema, PingBodySchema, TelemetryService } from '@sortie/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureFrames, fixturePoints } from '../telemetry/narrow/fixture-frames.ts';
import { RECEIVER_HOST, startDeliveryFixture, type DeliveryFixture } from '../testing/delivery-fixture.ts';
import { startHttpsReceiver, type TestReceiver } from '../testing/https-receiver.ts';
import type { TestOrg } from '../testing/test-service.ts';
import { CONNECT_EXAMPLES } from './grpc-page.ts';
import { mavlinkCatalogue, searchCatalogue } from './mavlink-page.ts';
import { EXAMPLE_DISPATCHED, EXAMPLE_LIMIT, EXAMPLE_PING, PYTHON_VERIFY } from './webhooks-page.ts';

/**
 * The guides under /docs checked against the running service: the curl walk-through answers what the
 * page shows, the scopes it lists are the ones enforced, the Python verifier accepts a real delivery,
 * the example bodies parse with the contracts' schemas, and every signal a real MAVLink capture stored is
 * in the catalogue with its dataType and unit.
 */
let f: DeliveryFixture;
let org: TestOrg;
let receiver: TestReceiver;
let experimentId: string;

beforeAll(async () => {
  f = await startDeliveryFixture({ queue: 'memory' });
  org = await f.t.createOrg();
  receiver = await startHttpsReceiver(f.cert);
  experimentId = (await f.t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'guides' } })).body.id;
}, 60_000);
afterAll(async () => {
  await receiver?.close();
  await f?.stop();
});

async function page(path: string): Promise<string> {
  const response = await fetch(`${f.t.url}${path}`);
  expect(response.status, path).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/html/);
  expect(response.headers.get('content-security-policy')).toContain("default-src 'none'");
  const html = await response.text();
  expect(html).not.toMatch(/<script|<link|\ssrc=|@import|url\(/i);
  return html;
}

const decode = (html: string) => html.replace(/&#(\d+);/g, (_, n) => String.fromCharCode(Number(n)));

describe('/docs/grpc', () => {
  it('its curl walk-through, run as printed, answers exactly what the page shows, on the HTTP and the gRPC port', async () => {
    const html = decode(await page('/docs/grpc'));
    for (const port of ['http', 'grpc'] as const) {
      const registered = await f.t.call('POST', '/api/streams/register', { key: org.key, body: { experimentId, datasetName: `walk ${port}`, channels: [{ name: 'alt' }] } });
      const fill = (text: string) => text.replaceAll('<experimentId>', experimentId).replaceAll('<datasetId>', registered.body.datasetId);
      for (const example of CONNECT_EXAMPLES) {
        // The page prints this very request and answer.
        expect(html).toContain(`-d '${JSON.stringify(example.request)}'`);
        expect(html).toContain(JSON.stringify(example.response));
        const base = port === 'http' ? `${f.t.url}/api/rpc` : f.t.service.grpcUrl;
        const response = await fetch(`${base}/sortie.telemetry.v1.TelemetryService/${example.method}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': org.key },
          body: fill(JSON.stringify(example.request)),
        });
        expect(await response.json(), `${example.method} on ${port}`).toEqual(example.response);
      }
    }
    expect(html).toContain(`curl -sS ${f.t.service.ctx.config.publicUrl}/api/rpc/sortie.telemetry.v1.TelemetryService/Query`);
  });

  it('lists the scope each method enforces, and the error codes a client sees', async () => {
    const html = await page('/docs/grpc');
    const scopeOf = (method: string) => new RegExp(`<td><code>${method}</code></td>.*?<td><code>([a-z:]+)</code></td>`).exec(html)?.[1];
    expect([scopeOf('Submit'), scopeOf('StreamSubmit'), scopeOf('Query')]).toEqual(['telemetry:write', 'telemetry:write', 'telemetry:read']);
    const reader = await org.keyWith(['telemetry:read']);
    const writer = await org.keyWith(['telemetry:write']);
    const client = (key: string) => createClient(TelemetryService, createGrpcTransport({ baseUrl: f.t.service.grpcUrl, interceptors: [(next) => (req) => (req.header.set('x-api-key', key), next(req))] }));
    const denied = async (call: Promise<unknown>) => ConnectError.from(await call.then(() => new Error('allowed'), (e: unknown) => e)).code;
    expect(await denied(client(reader.apiKey).submit({ datasetId: crypto.randomUUID() }))).toBe(Code.PermissionDenied);
    expect(await denied(client(writer.apiKey).query({ datasetId: crypto.randomUUID() }))).toBe(Code.PermissionDenied);
    async function* header() {
      yield { message: { case: 'header' as const, value: { datasetId: crypto.randomUUID(), experimentId: '', format: '' } } };
    }
    expect(await denied(client(reader.apiKey).streamSubmit(header()))).toBe(Code.PermissionDenied);
    // With the scope the page names, the same calls get past auth (to the dataset that does not exist).
    expect(await denied(client(writer.apiKey).submit({ datasetId: crypto.randomUUID() }))).toBe(Code.NotFound);
    expect(await denied(client(reader.apiKey).query({ datasetId: crypto.randomUUID(), channelIds: ['0'] }))).toBe(Code.NotFound);

    // The error table's row for invalid_request, as a curl user meets it on /api/rpc.
    expect(html).toMatch(/<td><code>invalid_request<\/code><\/td><td><code>INVALID_ARGUMENT<\/code> \(3\)<\/td><td><code>invalid_argument<\/code><\/td><td>400<\/td>/);
    const response = await fetch(`${f.t.url}/api/rpc/sortie.telemetry.v1.TelemetryService/Query`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': org.key },
      body: JSON.stringify({ datasetId: 'nope' }),
    });
    expect(response.status).toBe(400);
    expect(response.headers.get('x-sortie-error-code')).toBe('invalid_request');
    expect((await response.json()).code).toBe('invalid_argument');
  });
});

describe('/docs/webhooks', () => {
  it('shows bodies the contracts parse, and the shape of a real delivery', async () => {
    const html = decode(await page('/docs/webhooks'));
    expect(html).toContain(JSON.stringify(EXAMPLE_DISPATCHED, null, 2));
    expect(html).toContain(JSON.stringify(EXAMPLE_PING, null, 2));
    expect(CommandDispatchedBodySchema.parse(EXAMPLE_DISPATCHED)).toEqual(EXAMPLE_DISPATCHED);
    expect(PingBodySchema.parse(EXAMPLE_PING)).toEqual(EXAMPLE_PING);
    expect(html).toContain(JSON.stringify(EXAMPLE_LIMIT, null, 2));
    expect(LimitCrossingBodySchema.parse(EXAMPLE_LIMIT)).toEqual(EXAMPLE_LIMIT);
    for (const name of ['x-sortie-event', 'x-sortie-delivery', 'x-sortie-timestamp', 'x-sortie-signature', 'Sortie-Webhook/1']) expect(html).toContain(name);
    // The fixture's SORTIE_WEBHOOK_RETRY_SCHEDULE and time-out, as configured.
    expect(html).toContain('retried after 50 ms (the last wait repeats');
    expect(html).toContain('2xx within 3 s');
  });

  const python = spawnSync('python3', ['--version']).status === 0;
  it.skipIf(!python)('the Python verifier accepts a real signed delivery and refuses a changed byte', async () => {
    const created = await f.t.call('POST', '/api/webhooks/create', { key: org.key, body: { label: 'py', url: `https://${RECEIVER_HOST}:${receiver.port}/hook` } });
    const before = receiver.requests.length;
    const pinged = await f.t.call('POST', '/api/webhooks/test', { key: org.key, body: { endpointId: created.body.id } });
    expect(pinged.body.statusCode).toBe(200);
    const request = receiver.requests[before]!;
    const headers = Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k, String(v)]));
    const run = (body: Buffer) =>
      spawnSync('python3', ['-c', `${PYTHON_VERIFY}\nimport sys\nd = json.load(sys.stdin)\nprint(json.dumps(verify(bytes.fromhex(d["body"]), d["headers"], d["secrets"])))`], {
        input: JSON.stringify({ body: body.toString('hex'), headers, secrets: ['whsec_not_this_one', created.body.secret] }),
        encoding: 'utf8',
      });
    const accepted = run(request.rawBody);
    expect(accepted.status, accepted.stderr).toBe(0);
    expect(PingBodySchema.parse(JSON.parse(accepted.stdout))).toMatchObject({ eventType: 'ping', endpoint: { id: created.body.id } });
    const changed = Buffer.from(request.rawBody);
    changed.writeUInt8(changed.readUInt8(changed.length - 2) ^ 1, changed.length - 2);
    const refused = run(changed);
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain('no signature matches a live secret');
  });
});

describe('/docs/mavlink', () => {
  it('names every signal a real capture stored, with the dataType and unit its channel lists', async () => {
    const registered = await f.t.call('POST', '/api/streams/register', {
      key: org.key,
      body: { experimentId, datasetName: 'drone', storageShape: 'narrow', codec: 'mavlink', dialect: 'ardupilotmega', format: 'mavlink-raw-v1' },
    });
    const datasetId = registered.body.datasetId as string;
    const points = fixturePoints(fixtureFrames('ardupilot-v2.mavlink'));
    async function* messages() {
      yield { message: { case: 'header' as const, value: { experimentId, datasetId, format: 'mavlink-raw-v1' } } };
      for (let i = 0; i < points.length; i += 500) yield { message: { case: 'batch' as const, value: { points: points.slice(i, i + 500) } } };
    }
    await createClient(TelemetryService, createGrpcTransport({ baseUrl: f.t.service.grpcUrl })).streamSubmit(messages(), { headers: { 'x-api-key': org.key } });
    const channels = (await f.t.call('GET', `/api/datasets/channels?datasetId=${datasetId}&experimentId=${experimentId}`, { key: org.key })).body as {
      hypertableColName: string;
      dataType: string;
      unit: string;
    }[];
    expect(channels.length).toBeGreaterThan(50);
    const bySignal = new Map(mavlinkCatalogue().map((e) => [e.signal, e]));
    for (const channel of channels) {
      const element = /^(.*)\[(\d+)\]$/.exec(channel.hypertableColName);
      const entry = bySignal.get(element ? element[1]! : channel.hypertableColName);
      expect(entry, channel.hypertableColName).toBeDefined();
      if (element) expect(Number(element[2])).toBeLessThan(entry!.elements!);
      else expect(entry!.elements, channel.hypertableColName).toBeUndefined();
      expect([entry!.dataType, entry!.unit], channel.hypertableColName).toEqual([channel.dataType, channel.unit]);
    }
  });

  it('searches on the server, so the page needs no script', async () => {
    const all = await page('/docs/mavlink');
    expect(all).toContain('<code>mavlink.ATTITUDE.roll</code>');
    expect(all).toContain(`All ${mavlinkCatalogue().length} fields.`);
    const response = await fetch(`${f.t.url}/docs/mavlink?q=attitude`);
    expect(response.headers.get('content-security-policy')).toContain("form-action 'self'");
    const found = await response.text();
    expect(found).toContain('<code>mavlink.ATTITUDE.roll</code>');
    expect(found).not.toContain('mavlink.HEARTBEAT.');
    expect(found).toContain(`${searchCatalogue('attitude').length} of ${mavlinkCatalogue().length} fields match <code>attitude</code>`);
    expect(searchCatalogue('degE7').some((e) => e.signal === 'mavlink.GLOBAL_POSITION_INT.lat')).toBe(true);
    const hostile = await (await fetch(`${f.t.url}/docs/mavlink?q=${encodeURIComponent('"><script>x</script>')}`)).text();
    expect(hostile).not.toContain('<script>');
    expect(hostile).toContain('0 of');
  });
});
