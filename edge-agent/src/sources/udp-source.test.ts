// The UDP source receives and never sends: a spy on every socket's send() sees no call from it.
import { createSocket, Socket } from 'node:dgram';
import type { Socket as DgramSocket } from 'node:dgram';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MavlinkFramer, crcExtraOf } from '@sortie/contracts/mavlink';
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { LinkLossDetector } from '../link/link-loss-detector.ts';
import { Pipeline } from '../pipeline/pipeline.ts';
import { decodeAgentRecord } from '../record/agent-record.ts';
import { Spool } from '../spool/spool.ts';
import { FIXTURES, readFixture } from '../testing/fixtures.ts';
import { UdpSource } from './udp-source.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'udp-source-'));
});
afterEach(async () => {
  vi.restoreAllMocks();
  await rm(dir, { recursive: true, force: true });
});

async function until(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

it('spools the frames of every datagram and never calls send()', async () => {
  const send = vi.spyOn(Socket.prototype, 'send');
  const source = new UdpSource({ host: '127.0.0.1', port: 0 });
  await source.open();
  const spool = await Spool.open({ dir });
  const pipeline = new Pipeline({ source, spool, detector: new LinkLossDetector({ thresholdUs: 5e6 }), crcExtra: crcExtraOf });
  const run = pipeline.run();

  // One frame per datagram, as autopilots and routers send them.
  const frames = new MavlinkFramer({ crcExtra: crcExtraOf }).push(readFixture(FIXTURES.px4Junk));
  const sender: DgramSocket = createSocket('udp4');
  // Bound first: send() on an unbound socket binds and then calls itself again, counting twice.
  await new Promise<void>((resolve) => sender.bind(0, '127.0.0.1', resolve));
  const { port } = source.address();
  for (const f of frames) {
    await new Promise<void>((resolve, reject) => sender.send(f.bytes, port, '127.0.0.1', (e) => (e ? reject(e) : resolve())));
  }
  await until(() => source.stats().chunks === frames.length);
  await pipeline.stop();
  await run;

  const records = await spool.readFrom(0n, 1000);
  expect(records.map((r) => Buffer.from(decodeAgentRecord(r.payload).frame).toString('hex'))).toEqual(
    frames.map((f) => Buffer.from(f.bytes).toString('hex')),
  );
  expect(source.peers()).toEqual([`127.0.0.1:${(sender.address() as { port: number }).port}`]);
  await spool.close();
  sender.close();

  // The spy works (it saw every datagram the test sent) and saw nothing from any other socket.
  expect(send.mock.contexts.filter((socket) => socket === sender)).toHaveLength(frames.length);
  expect(send.mock.contexts.filter((socket) => socket !== sender)).toHaveLength(0);
});

it('fails at open when the port is taken', async () => {
  const first = new UdpSource({ host: '127.0.0.1', port: 0 });
  await first.open();
  const second = new UdpSource({ host: '127.0.0.1', port: first.address().port });
  await expect(second.open()).rejects.toThrow(/EADDRINUSE/);
  await first.close();
});
