// The real CLI, killed with SIGKILL in the middle of a replay several times and started again each
// time: the spool ends up with every frame of the file exactly once, in order, and frame_seq never
// goes back.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TlogWalker, crcExtraOf } from '@sortie/contracts/mavlink';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { decodeAgentRecord } from './record/agent-record.ts';
import { Spool } from './spool/spool.ts';
import { FIXTURES, fixturePath, readFixture } from './testing/fixtures.ts';

const MAIN = fileURLToPath(new URL('./main.ts', import.meta.url));

interface Run {
  lines: Array<Record<string, unknown>>;
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * Runs the agent; with `killWhen`, SIGKILLs it a random few ms after the first output line that
 * matches, so the kill lands anywhere in the append / group-commit / checkpoint cycle.
 */
function runAgent(args: string[], killWhen?: (line: Record<string, unknown>) => boolean): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    const run: Run = { lines: [], code: null, signal: null };
    let out = '';
    let err = '';
    let killing = false;
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      out += chunk;
      let nl: number;
      while ((nl = out.indexOf('\n')) >= 0) {
        const line = JSON.parse(out.slice(0, nl)) as Record<string, unknown>;
        out = out.slice(nl + 1);
        run.lines.push(line);
        if (killWhen?.(line) && !killing) {
          killing = true;
          setTimeout(() => child.kill('SIGKILL'), Math.random() * 60);
        }
      }
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => (err += chunk));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      run.code = code;
      run.signal = signal;
      if (err.trim()) reject(new Error(`agent wrote to stderr: ${err}`));
      else resolve(run);
    });
  });
}

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agent-crash-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

it('SIGKILL mid-replay, restart, repeat: every frame spooled once, in order, seqs monotonic', async () => {
  const tlog = fixturePath(FIXTURES.tlog);
  const args = (speed: string) => ['--source', `file:${tlog}`, '--spool-dir', dir, '--speed', speed, '--status-interval', '0.05'];

  let highestReported = 0n;
  for (let round = 0; round < 3; round++) {
    // Killed once this run has spooled a few thousand frames of its own (each run resumes further on).
    const floor = highestReported + 2000n + BigInt(Math.floor(Math.random() * 3000));
    const run = await runAgent(args('40'), (l) => l['msg'] === 'status' && BigInt(String(l['durableSeq'])) >= floor);
    expect(run.signal).toBe('SIGKILL');
    const started = run.lines.find((l) => l['msg'] === 'agent started');
    // A restarted agent hands out seqs above everything an earlier run reported durable.
    expect(BigInt(String(started?.['nextSeq']))).toBeGreaterThan(highestReported);
    const durable = run.lines.filter((l) => l['msg'] === 'status').map((l) => BigInt(String(l['durableSeq'])));
    expect(durable.length, `round ${round} reported its progress`).toBeGreaterThan(0);
    for (const d of durable) if (d > highestReported) highestReported = d;
    if (round > 0) expect(run.lines.some((l) => l['msg'] === 'resuming an interrupted replay')).toBe(true);
  }
  expect(highestReported).toBeGreaterThan(0n);
  expect(highestReported).toBeLessThan(23_894n); // the kills really landed mid-replay

  const last = await runAgent(args('max'));
  expect(last.code).toBe(0);
  expect(last.lines.at(-1)?.['msg']).toBe('replay finished');

  const expected = new TlogWalker({ crcExtra: crcExtraOf }).push(readFixture(FIXTURES.tlog));
  const spool = await Spool.open({ dir });
  try {
    const records = await spool.readFrom(0n, 100_000);
    expect(records).toHaveLength(expected.length);
    let problems = 0;
    for (let i = 0; i < records.length; i++) {
      const r = records[i]!;
      if (i > 0 && r.seq <= records[i - 1]!.seq) problems++;
      const frame = decodeAgentRecord(r.payload).frame;
      if (Buffer.compare(frame, expected[i]!.frame.bytes) !== 0 || r.receivedAtUs !== expected[i]!.timestampUs) problems++;
    }
    expect(problems).toBe(0);
  } finally {
    await spool.close();
  }
  // A gapless recording replayed in pieces is still no link loss.
  expect(await readFile(join(dir, 'link-events.jsonl'), 'utf8')).toBe('');
}, 60_000);
