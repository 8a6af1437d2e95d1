import { PassThrough } from 'node:stream';
import { run } from '@sortie/cli';
import { createSortieClient, type SortieClient } from '@sortie/client';
import { startTestService, type TestOrg, type TestService } from '@sortie/cloud/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// `sortie limits list|create|delete` through `run` (what the bin calls) against the real service, the
// LIMIT event a rule made by the CLI produces on append, listed by `sortie events`, and opting a webhook
// endpoint in to limit crossings.
let t: TestService;
let org: TestOrg;
let client: SortieClient;
let experimentId: string;
let datasetId: string;

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

beforeAll(async () => {
  // Webhook URLs may name loopback (nothing is delivered: no command is dispatched here).
  t = await startTestService({ env: { SORTIE_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8' } });
  org = await t.createOrg('cli limits');
  client = createSortieClient({ baseUrl: t.url, apiKey: org.key });
  experimentId = (await client.experiments.create({ name: 'test day' })).id;
  datasetId = (await client.datasets.register({ experimentId, datasetName: 'stand', channels: [{ name: 'thrust', unit: 'N' }] })).datasetId;
});
afterAll(() => t?.stop());

describe('sortie limits', () => {
  it('create on a dataset and on an experiment, list them, and the rule makes LIMIT events', async () => {
    const created = await sortie(['limits', 'create', '0', '--dataset', datasetId, '--above', '100', '--hold', '40', '--severity', 'critical', '--json']);
    expect(created.code, created.stderr).toBe(0);
    const rule = JSON.parse(created.stdout);
    expect(rule).toMatchObject({ experimentId, datasetId, signal: '0', condition: 'above', high: 100, holdMs: 40, severity: 'critical', name: 'ch_0 above 100' });

    const wide = await sortie(['limits', 'create', 'mavlink.ATTITUDE.roll', '--experiment', experimentId, '--outside=-0.5,0.5', '--name', 'roll']);
    expect(wide.code, wide.stderr).toBe(0);
    expect(wide.stdout).toMatch(/^watches\s+every dataset of [0-9a-f-]{36}$/m);
    expect(wide.stdout).toMatch(/^bound\s+outside \[-0\.5, 0\.5\]$/m);

    const listed = await sortie(['limits', 'list', datasetId]);
    expect(listed.code).toBe(0);
    const lines = listed.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ID\s+NAME\s+WATCHES\s+SIGNAL\s+BOUND\s+HOLD MS\s+SEVERITY$/);
    expect(lines[1]).toMatch(new RegExp(`^${rule.id}\\s+ch_0 above 100\\s+${datasetId}\\s+0\\s+above 100\\s+40\\s+critical$`));
    expect(lines[2]).toMatch(/\s+roll\s+every dataset of .*mavlink\.ATTITUDE\.roll\s+outside \[-0\.5, 0\.5\]\s+0\s+warning$/);
    expect(JSON.parse((await sortie(['limits', 'list', '--experiment', experimentId, '--json'])).stdout)).toHaveLength(2);

    await client.datasets.append({
      experimentId,
      datasetId,
      rows: [0, 20, 40, 60, 80, 100].map((ms, i) => ({ timestamp: new Date(Date.UTC(2026, 0, 1) + ms).toISOString(), values: { thrust: [10, 120, 150, 130, 90, 80][i]! } })),
    });
    const events = await sortie(['events', datasetId, '--kind', 'LIMIT']);
    expect(events.stdout).toContain('2026-01-01T00:00:00.020Z  LIMIT  thrust above 100 (critical)');
  });

  it('delete; a second delete is the service 404 (exit 1)', async () => {
    const rule = JSON.parse((await sortie(['limits', 'create', '0', '--dataset', datasetId, '--below=-5', '--json'])).stdout);
    expect(rule).toMatchObject({ condition: 'below', low: -5, name: 'ch_0 below -5' });
    const deleted = await sortie(['limits', 'delete', rule.id]);
    expect([deleted.code, deleted.stdout]).toEqual([0, `deleted ${rule.id}\n`]);
    expect((await sortie(['limits', 'list', datasetId])).stdout).not.toContain(rule.id);
    const again = await sortie(['limits', 'delete', rule.id]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('404 not_found');
  });

  it('refuses a missing or doubled bound (usage, nothing sent), and shows the service naming a bad field', async () => {
    const none = await sortie(['limits', 'create', '0', '--dataset', datasetId]);
    expect([none.code, none.stderr]).toEqual([2, 'sortie limits create: give exactly one of --above X, --below X, --outside LOW,HIGH\n']);
    expect((await sortie(['limits', 'create', '0', '--dataset', datasetId, '--above', '1', '--below', '0'])).code).toBe(2);
    expect((await sortie(['limits', 'create', '0', '--dataset', datasetId, '--outside', '3'])).code).toBe(2);
    expect((await sortie(['limits', 'create', '0', '--above', '1'])).stderr).toContain('give --dataset ID');
    expect((await sortie(['limits', 'list'])).code).toBe(2);
    const typo = await sortie(['limits', 'create', 'mavlink.ATTITUDE.rol', '--experiment', experimentId, '--above', '1']);
    expect(typo.code).toBe(1);
    expect(typo.stderr).toMatch(/400 invalid_request: .*\n {2}signal: no numeric MAVLink field is named mavlink\.ATTITUDE\.rol/);
  });

  it('webhooks create --limit-events, and webhooks update --limit-events on|off', async () => {
    const created = await sortie(['webhooks', 'create', 'https://127.0.0.1:8443/limits', '--limit-events']);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toMatch(/^limitEvents\s+true$/m);
    const id = /^id\s+(\S+)$/m.exec(created.stdout)![1]!;
    const off = await sortie(['webhooks', 'update', id, '--limit-events', 'off', '--label', 'muted']);
    expect(off.code, off.stderr).toBe(0);
    expect(off.stdout).toMatch(/^label\s+muted$/m);
    expect(off.stdout).toMatch(/^limitEvents\s+false$/m);
    expect((await client.webhooks.list()).find((e) => e.id === id)).toMatchObject({ label: 'muted', limitEvents: false });
    expect((await sortie(['webhooks', 'update', id, '--limit-events', 'maybe'])).code).toBe(2);
    const plain = JSON.parse((await sortie(['webhooks', 'create', 'https://127.0.0.1:8443/commands', '--json'])).stdout);
    expect(plain.limitEvents).toBe(false);
  });
});
