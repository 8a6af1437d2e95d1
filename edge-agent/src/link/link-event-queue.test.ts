import { appendFile, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LINK_EVENTS_FILE, LinkEventQueue } from './link-event-queue.ts';
import type { LinkEvent } from './link-loss-detector.ts';

const loss = (sysid: number, lastFrameUs: number): LinkEvent => ({
  type: 'LINK_LOSS',
  sysid,
  lastFrameUs,
  detectedAtUs: lastFrameUs + 5_000_000,
  thresholdUs: 5_000_000,
});

let dir: string;
let path: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'link-events-'));
  path = join(dir, LINK_EVENTS_FILE);
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('LinkEventQueue', () => {
  it('keeps unacknowledged events across a reopen, in order, with monotonic ids', async () => {
    const q = await LinkEventQueue.open(path);
    const a = await q.push(loss(1, 100));
    const b = await q.push(loss(2, 200));
    await q.push(loss(3, 300));
    await q.ack(b.id);
    await q.close();

    const again = await LinkEventQueue.open(path);
    expect(again.pending().map((e) => [e.id, e.event.sysid])).toEqual([
      [a.id, 1],
      [3, 3],
    ]);
    expect(again.pending()[0]?.key).toBe('LINK_LOSS:1:100');
    expect((await again.push(loss(4, 400))).id).toBe(4);
    await again.close();
  });

  it('cuts a torn last line instead of failing or losing the lines before it', async () => {
    const q = await LinkEventQueue.open(path);
    await q.push(loss(1, 100));
    await q.close();
    await appendFile(path, '{"v":1,"kind":"event","id":2,"key":"LINK_LO');
    const again = await LinkEventQueue.open(path);
    expect(again.pending().map((e) => e.id)).toEqual([1]);
    await again.push(loss(2, 200));
    await again.close();
    const lines = (await readFile(path, 'utf8')).trim().split('\n');
    expect(lines.map((l) => (JSON.parse(l) as { id: number }).id)).toEqual([1, 2]);
  });

  it('compacts a fully acknowledged file without reusing ids', async () => {
    const q = await LinkEventQueue.open(path);
    for (let i = 0; i < 400; i++) await q.ack((await q.push(loss(1, i))).id);
    await q.close();
    expect((await stat(path)).size).toBeGreaterThan(64 * 1024);
    const again = await LinkEventQueue.open(path);
    expect((await stat(path)).size).toBeLessThan(100);
    expect((await again.push(loss(1, 999))).id).toBe(401);
    await again.close();
  });

  it('announces queued events to a waiting uplink', async () => {
    const q = await LinkEventQueue.open(path);
    const seen: number[] = [];
    q.on('queued', (e) => seen.push(e.event.sysid));
    await q.push(loss(9, 1));
    expect(seen).toEqual([9]);
    expect(q.stats()).toEqual({ queued: 1, pending: 1 });
    await q.close();
  });

  it('refuses a file written by a newer format', async () => {
    await writeFile(path, '{"v":2,"kind":"event","id":1}\n');
    await expect(LinkEventQueue.open(path)).rejects.toThrow(/unknown version/);
  });
});
