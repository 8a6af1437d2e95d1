import { mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createWebhookReceiver, serveReceiver, type Decision, type WebhookReceiver } from '@sortie/contracts/examples/webhook-receiver';
import { eventually, RECEIVER_HOST, startDeliveryFixture, type DeliveryFixture } from '../testing/delivery-fixture.ts';

/**
 * The example receiver from contracts/examples against the real service: verify, journal, 2xx,
 * act once per command, ack or nack through ack.url.
 */
let f: DeliveryFixture;
let dir: string;
beforeAll(async () => {
  f = await startDeliveryFixture();
  dir = await mkdtemp(path.join(tmpdir(), 'sortie-receiver-'));
});
afterAll(async () => {
  await f?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function setup(decide: (commandText: string) => Decision) {
  const org = await f.t.createOrg();
  const acted: string[] = [];
  let secret = '';
  const journalPath = path.join(dir, `${crypto.randomUUID()}.jsonl`);
  const open = () =>
    createWebhookReceiver({
      secrets: [secret],
      journalPath,
      act: async (command) => {
        acted.push(command.id);
        return decide(command.commandText);
      },
    });
  let receiver: WebhookReceiver = await open();
  let server: Server = serveReceiver(receiver, f.cert);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const endpoint = await f.t.call('POST', '/api/webhooks/create', { key: org.key, body: { label: 'example', url: `https://${RECEIVER_HOST}:${port}/` } });
  secret = endpoint.body.secret;
  // The receiver was made before the secret existed; reopen it with the secret (same journal).
  await receiver.close();
  receiver = await open();
  server.close();
  server = serveReceiver(receiver, f.cert);
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  const exp = await f.t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'receiver' } });
  const reg = await f.t.call('POST', '/api/streams/register', { key: org.key, body: { experimentId: exp.body.id, datasetName: 'uav', channels: [{ name: 'alt' }] } });
  await f.t.call('POST', '/api/datasets/arm', { key: org.key, body: { datasetId: reg.body.datasetId, ttlSeconds: 600 } });
  const dispatch = async (commandText: string) => {
    const c = await f.t.call('POST', '/api/commands/create', { key: org.key, body: { experimentId: exp.body.id, datasetId: reg.body.datasetId, commandText, relTime: 0 } });
    const d = await f.t.call('POST', '/api/commands/dispatch', { key: org.key, body: { commandId: c.body.id } });
    expect(d.status).toBe(200);
    return c.body.id as string;
  };
  const statusOf = async (commandId: string) => {
    const list = await f.t.call('GET', `/api/commands/list?experimentId=${exp.body.id}&datasetId=${reg.body.datasetId}`, { key: org.key });
    return (list.body as any[]).find((c) => c.id === commandId)!;
  };
  return {
    acted,
    secret: () => secret,
    dispatch,
    statusOf,
    receiver: () => receiver,
    reopen: async () => {
      await receiver.close();
      receiver = await open();
      return receiver;
    },
    close: async () => {
      server.closeAllConnections();
      server.close();
      await receiver.close();
    },
  };
}

it('acks a command it carries out, once, and remembers it across a restart', async () => {
  const s = await setup(() => ({ state: 'acked', detail: 'loiter engaged' }));
  try {
    const commandId = await s.dispatch('LOITER');
    const record = await eventually(async () => {
      const c = await s.statusOf(commandId);
      return c.status === 'acked' ? c : undefined;
    });
    expect(record.statusDetail).toBe('loiter engaged');
    expect(s.acted).toEqual([commandId]);

    // The receiver answered at once (202), before acting; after a restart the journal says it is done.
    const replay = await s.reopen();
    const delivered = await f.t.service.ctx.db.selectFrom('delivery_attempts').select('status_code').where('command_id', '=', commandId).execute();
    expect(delivered.map((d) => d.status_code)).toEqual([202]);
    await replay.idle();
    expect(s.acted).toEqual([commandId]);
  } finally {
    await s.close();
  }
});

it('nacks a command it refuses', async () => {
  const s = await setup((text) => (text === 'FLIP' ? { state: 'nacked', detail: 'refused: not allowed in this flight mode' } : { state: 'acked', detail: '' }));
  try {
    const commandId = await s.dispatch('FLIP');
    const record = await eventually(async () => {
      const c = await s.statusOf(commandId);
      return c.status === 'nacked' ? c : undefined;
    });
    expect(record.statusDetail).toBe('refused: not allowed in this flight mode');
  } finally {
    await s.close();
  }
});

it('verifies before anything else, answers a duplicate with 200, and never acts past the deadline', async () => {
  const s = await setup(() => ({ state: 'acked', detail: '' }));
  try {
    const { signWebhook } = await import('@sortie/contracts');
    const receiver = s.receiver();
    const commandId = crypto.randomUUID();
    const body = JSON.stringify({
      eventType: 'command.dispatched',
      command: { id: commandId, commandText: 'X' },
      ack: { url: `${f.t.url}/api/commands/ack`, token: 'cak_x', deadline: new Date(Date.now() - 1000).toISOString() },
    });
    const bytes = new TextEncoder().encode(body);
    const sign = (secrets: string[]) => signWebhook({ secrets, eventType: 'command.dispatched', deliveryId: 'd.1', rawBody: body });
    expect(await receiver.handle(bytes, await sign(['whsec_wrong']))).toEqual({ status: 401, body: 'signature_mismatch' });
    expect((await receiver.handle(bytes, await sign([s.secret()]))).status).toBe(202);
    expect(await receiver.handle(bytes, await sign([s.secret()]))).toEqual({ status: 200, body: 'duplicate' });
    await receiver.idle();
    expect(s.acted).toEqual([]);
  } finally {
    await s.close();
  }
});
