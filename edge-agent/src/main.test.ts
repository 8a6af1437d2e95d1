// The CLI as an operator runs it: usage errors, a replay end to end, a live UDP link that falls
// silent, and a clean stop on SIGTERM.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MavlinkFramer, crcExtraOf } from '@sortie/contracts/mavlink';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Spool } from './spool/spool.ts';
import { FIXTURES, fixturePath, readFixture } from './testing/fixtures.ts';

const MAIN = fileURLToPath(new URL('./main.ts', import.meta.url));

interface Agent {
  child: ChildProcess;
  lines: Array<Record<string, unknown>>;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
  waitFor: (msg: string, timeoutMs?: number) => Promise<Record<string, unknown>>;
}

function start(args: string[], env: Record<string, string> = {}): Agent {
  const child = spawn(process.execPath, [MAIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let out = '';
  let err = '';
  let pending = '';
  const lines: Array<Record<string, unknown>> = [];
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (chunk: string) => {
    out += chunk;
    pending += chunk;
    let nl: number;
    while ((nl = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      try {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // --help text
      }
    }
  });
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => (err += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return {
    child,
    lines,
    stdout: () => out,
    stderr: () => err,
    exited,
    async waitFor(msg, timeoutMs = 10_000) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const found = lines.find((l) => String(l['msg']).startsWith(msg));
        if (found) return found;
        if (Date.now() > end) throw new Error(`no "${msg}" line; stdout: ${out} stderr: ${err}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
  };
}

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agent-cli-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('sortie agent CLI', () => {
  it('prints usage for --help and exits 0', async () => {
    const agent = start(['--help']);
    expect(await agent.exited).toBe(0);
    expect(agent.stdout()).toContain('--source SOURCE');
    expect(agent.stdout()).toContain('SORTIE_AGENT_SPOOL_DIR');
  });

  it('exits 2 with the reasons on stderr for bad usage', async () => {
    const agent = start(['--source', 'tcp:1.2.3.4:5760', '--speed', 'fast']);
    expect(await agent.exited).toBe(2);
    expect(agent.stderr()).toContain('--speed (SORTIE_AGENT_SPEED): must be a positive number or max');
    expect(agent.stderr()).toContain('--spool-dir (SORTIE_AGENT_SPOOL_DIR): is required');
    expect(agent.stdout()).toBe('');
  });

  it('with a cloud that cannot be reached: spools the replay, backs off, and stops cleanly on SIGTERM with everything kept', async () => {
    const agent = start(['--source', `file:${fixturePath(FIXTURES.px4Junk)}`, '--spool-dir', dir, '--speed', 'max', '--status-interval', '0.1'], {
      SORTIE_AGENT_CLOUD: 'http://127.0.0.1:1',
      SORTIE_AGENT_GRPC: 'http://127.0.0.1:1',
      SORTIE_AGENT_API_KEY: 'sk_secret_value',
      SORTIE_AGENT_EXPERIMENT: '0b9d4c1e-3f59-4a55-9a43-5f1f3e0e8a01',
      SORTIE_AGENT_RETRY_MAX_SECONDS: '0.5',
    });
    expect((await agent.waitFor('cloud unreachable'))['error']).toMatch(/fetch failed|ECONNREFUSED/);
    await agent.waitFor('replay spooled; waiting for the cloud');
    for (let i = 0; i < 200 && !agent.lines.some((l) => l['msg'] === 'status' && l['uplink'] === 'backing-off'); i++) {
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(agent.lines.some((l) => l['msg'] === 'status' && l['uplink'] === 'backing-off' && l['unacknowledged'] === 138)).toBe(true);
    agent.child.kill('SIGTERM');
    expect(await agent.exited).toBe(0);
    expect(agent.stdout()).not.toContain('sk_secret_value');
    const spool = await Spool.open({ dir });
    expect(spool.ackedSeq).toBe(0n);
    expect((await spool.readFrom(0n, 1000)).length).toBe(138);
    await spool.close();
  });

  it('replays the junk-prefixed capture end to end: 138 frames spooled, 5 junk bytes, exit 0', async () => {
    const agent = start(['--source', `file:${fixturePath(FIXTURES.px4Junk)}`, '--spool-dir', dir, '--speed', 'max']);
    expect(await agent.exited).toBe(0);
    expect(await agent.waitFor('replay finished')).toMatchObject({ framesIn: 138, spooled: 138, junkBytes: 5, durableSeq: '138' });
    // Said before the first frame: a capture without timestamps is dated by its messages' boot time, from when the replay began.
    const timeBase = await agent.waitFor('time base');
    expect(timeBase).toMatchObject({ timeBase: 'boot', file: fixturePath(FIXTURES.px4Junk) });
    expect(String(timeBase['msg'])).toMatch(/^time base: its messages' own boot time \(HIGHRES_IMU\.time_usec first\), from \d{4}-/);
    expect(agent.lines.indexOf(timeBase)).toBeLessThan(agent.lines.findIndex((l) => l['msg'] === 'replay finished'));
  });

  it('stops a replay into a full spool with no uplink (exit 1), keeps what it spooled, and resumes with more room', async () => {
    const tlog = `file:${fixturePath(FIXTURES.tlog)}`;
    const first = start(['--source', tlog, '--spool-dir', dir, '--speed', 'max', '--spool-max-bytes', '1MiB']);
    expect(await first.exited).toBe(1);
    expect(String((await first.waitFor('spool full'))['msg'])).toContain('raise --spool-max-bytes');
    const kept = Number((await first.waitFor('stopped'))['spooled']);
    expect(kept).toBeGreaterThan(1000);

    const second = start(['--source', tlog, '--spool-dir', dir, '--speed', 'max', '--spool-max-bytes', '8MiB']);
    expect(await second.exited).toBe(0);
    expect(await second.waitFor('resuming an interrupted replay')).toMatchObject({ from: 'checkpoint' });
    expect(await second.waitFor('replay finished')).toMatchObject({ spooled: 23_894 - kept, durableSeq: '23894' });
  });

  it('on a live UDP link: one LINK_LOSS when the vehicle falls silent, regained when it is back, clean exit on SIGTERM', async () => {
    const agent = start(['--source', 'udp:127.0.0.1:0', '--spool-dir', dir, '--link-loss-seconds', '0.3', '--status-interval', '0.1']);
    const started = await agent.waitFor('agent started');
    const port = Number(/:(\d+)$/.exec(String(started['sourceState']))?.[1]);
    expect(port).toBeGreaterThan(0);

    const frames = new MavlinkFramer({ crcExtra: crcExtraOf }).push(readFixture(FIXTURES.v2));
    const sender = createSocket('udp4');
    const send = (from: number, to: number) =>
      Promise.all(frames.slice(from, to).map((f) => new Promise((r) => sender.send(f.bytes, port, '127.0.0.1', r))));
    await send(0, 200); // includes HEARTBEATs: the system is watched from here
    await agent.waitFor('LINK_LOSS'); // silence
    await new Promise((r) => setTimeout(r, 600)); // still silent: no second LINK_LOSS
    await send(200, 400);
    await agent.waitFor('vehicle link regained');
    sender.close();
    // Every datagram read before stopping (closing the socket drops what the kernel still holds).
    for (let i = 0; i < 200 && !agent.lines.some((l) => l['msg'] === 'status' && l['framesIn'] === 400); i++) {
      await new Promise((r) => setTimeout(r, 25));
    }

    agent.child.kill('SIGTERM');
    expect(await agent.exited).toBe(0);
    expect(agent.lines.filter((l) => String(l['msg']).startsWith('LINK_LOSS'))).toHaveLength(1);
    expect(await agent.waitFor('stopped')).toMatchObject({ framesIn: 400, spooled: 400 });

    const events = (await readFile(join(dir, 'link-events.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as { event: { type: string } });
    expect(events.map((e) => e.event.type)).toEqual(['LINK_LOSS', 'LINK_REGAINED']);
    const spool = await Spool.open({ dir });
    expect((await spool.readFrom(0n, 1000)).length).toBe(400);
    await spool.close();
  });
});
