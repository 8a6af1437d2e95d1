// `sortie modes` against the real service: a MAVLink flight's modes as its autopilot reported them, named
// as the console's band and an export's MODE events name them. An ArduSub dive whose companion computer's
// HEARTBEAT (component 194, mode 0, armed bit) interleaves with the autopilot's, MANUAL then ALT_HOLD.
import { PassThrough } from 'node:stream';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { run } from '@sortie/cli';
import { TelemetryService } from '@sortie/contracts';
import { ARDUSUB_MANUAL_ARMED, ardusubDiveWithCompanion, px4Mission, type SyntheticFrame } from '@sortie/contracts/testing';
import { startTestService, type TestOrg, type TestService } from '@sortie/cloud/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let t: TestService;
let org: TestOrg;
let experimentId: string;
const START_US = Date.UTC(2026, 5, 1, 10, 0, 0) * 1000;

class Capture extends PassThrough {
  text = '';
  constructor() {
    super();
    this.on('data', (chunk: Buffer) => (this.text += chunk.toString()));
  }
}

async function sortie(args: string[]) {
  const stdout = new Capture();
  const stderr = new Capture();
  const code = await run(args, { env: { SORTIE_URL: t.url, SORTIE_API_KEY: org.key }, stdout, stderr });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

/** A flight as the agent sends it: each frame received 3 ms after it was sent. */
async function flight(name: string, frames: readonly SyntheticFrame[]): Promise<string> {
  const registered = await t.call('POST', '/api/streams/register', {
    key: org.key,
    body: { experimentId, datasetName: name, storageShape: 'narrow', codec: 'mavlink', dialect: 'ardupilotmega', format: 'mavlink-raw-v1' },
  });
  const datasetId = registered.body.datasetId as string;
  const at = (us: number) => ({ seconds: BigInt(Math.floor(us / 1e6)), nanos: (us % 1e6) * 1000 });
  const points = frames.map((f, i) => ({ timestamp: at(START_US + f.atUs + 3_000), type: { case: 'bytes' as const, value: f.bytes }, frameSeq: BigInt(i + 1) }));
  async function* messages() {
    yield { message: { case: 'header' as const, value: { experimentId, datasetId, format: 'mavlink-raw-v1' } } };
    yield { message: { case: 'batch' as const, value: { points } } };
  }
  const client = createClient(TelemetryService, createGrpcTransport({ baseUrl: t.service.grpcUrl }));
  await client.streamSubmit(messages(), { headers: { 'x-api-key': org.key } });
  return datasetId;
}

beforeAll(async () => {
  t = await startTestService();
  org = await t.createOrg('modes');
  experimentId = (await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'autopilots' } })).body.id;
});
afterAll(() => t?.stop());

describe('sortie modes', () => {
  it("prints the autopilot's modes and armed state over time; the companion computer's heartbeats change nothing", async () => {
    const dive = await flight('bluerov', ardusubDiveWithCompanion(20, (second) => (second < 8 ? ARDUSUB_MANUAL_ARMED : { ...ARDUSUB_MANUAL_ARMED, customMode: 2 })));
    const out = await sortie(['modes', dive]);
    expect(out.stderr).toContain('ArduSub: 2 mode spans from 40 HEARTBEATs');
    expect(out.code).toBe(0);
    const lines = out.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^FROM\s+TO\s+MODE\s+ARMED$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/).slice(2))).toEqual([
      ['MANUAL', 'armed'],
      ['ALT_HOLD', 'armed'],
    ]);
    // MANUAL from the autopilot's first HEARTBEAT (50 ms in) to its first in ALT_HOLD (8.05 s), which runs to the last HEARTBEAT heard (19.51 s).
    expect(lines.slice(1).map((l) => l.split(/\s+/).slice(0, 2))).toEqual([
      ['2026-06-01T10:00:00.053000Z', '2026-06-01T10:00:08.053000Z'],
      ['2026-06-01T10:00:08.053000Z', expect.stringMatching(/^2026-06-01T10:00:19\.5\d{5}Z$/)],
    ]);

    const asJson = await sortie(['modes', dive, '--json']);
    expect(JSON.parse(asJson.stdout)).toMatchObject({ datasetId: dive, vehicle: 'ArduSub', modes: [{ mode: 'MANUAL', armed: true }, { mode: 'ALT_HOLD', armed: true }] });
  });

  it('names a PX4 mission as QGroundControl does', async () => {
    const px4 = await flight('px4', px4Mission(10));
    const out = await sortie(['modes', px4, '--json']);
    expect(out.code).toBe(0);
    expect(JSON.parse(out.stdout)).toMatchObject({ vehicle: 'PX4', modes: [{ mode: 'Mission', armed: true }] });
  });
});
