// Kills a real writer process with SIGKILL mid-stream, several times over the same spool, and checks
// that everything it was told is durable survived, intact and exactly once.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { Spool } from './spool.ts';

const WRITER = fileURLToPath(new URL('./crash-writer.fixture.ts', import.meta.url));

/** Same function as in crash-writer.fixture.ts. */
function payloadForSeq(seq: bigint): Buffer {
  const b = Buffer.alloc(40);
  b.writeBigUInt64LE(seq, 0);
  for (let k = 8; k < 40; k++) b[k] = Number((seq * 131n + BigInt(k) * 17n) & 0xffn);
  return b;
}

interface Round {
  openedAt: bigint;
  durable: Array<[bigint, bigint]>;
  acks: bigint[];
  signal: NodeJS.Signals | null;
}

/** Runs the writer until it has reported `killAfter` durable batches, then SIGKILLs it. */
function runWriterAndKill(dir: string, killAfter: number): Promise<Round> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [WRITER, dir], { stdio: ['ignore', 'pipe', 'pipe'] });
    const round: Round = { openedAt: -1n, durable: [], acks: [], signal: null };
    let out = '';
    let err = '';
    let killed = false;
    const onLine = (line: string): void => {
      const [kind, a, b] = line.split(' ');
      if (kind === 'open' && a) round.openedAt = BigInt(a);
      else if (kind === 'durable' && a && b) round.durable.push([BigInt(a), BigInt(b)]);
      else if (kind === 'ack' && a) round.acks.push(BigInt(a));
      if (!killed && round.durable.length >= killAfter) {
        killed = true;
        // A random extra delay so the kill lands anywhere in the append/write/fsync cycle.
        setTimeout(() => child.kill('SIGKILL'), Math.random() * 15);
      }
    };
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      out += chunk;
      let nl: number;
      while ((nl = out.indexOf('\n')) >= 0) {
        onLine(out.slice(0, nl));
        out = out.slice(nl + 1);
      }
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      err += chunk;
    });
    child.on('error', reject);
    // 'close' comes after stdout is drained: every line printed before the kill has been seen.
    child.on('close', (code, signal) => {
      round.signal = signal;
      if (signal !== 'SIGKILL') reject(new Error(`writer exited with ${code ?? signal}: ${err}`));
      else resolve(round);
    });
  });
}

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'spool-crash-'));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

it('keeps every record reported durable across repeated SIGKILLs, once and intact', async () => {
  const rounds: Round[] = [];
  let maxReported = 0n;
  for (let r = 0; r < 5; r++) {
    const round = await runWriterAndKill(dir, 5 + Math.floor(Math.random() * 40));
    expect(round.signal).toBe('SIGKILL');
    expect(round.durable.length).toBeGreaterThan(0);
    // A restarted writer never hands out a seq at or below one already reported durable.
    expect(round.openedAt).toBeGreaterThan(maxReported);
    for (const [, last] of round.durable) if (last > maxReported) maxReported = last;
    rounds.push(round);
  }

  const spool = await Spool.open({ dir });
  try {
    const maxAckReported = rounds.flatMap((r) => r.acks).reduce((m, a) => (a > m ? a : m), 0n);
    expect(spool.ackedSeq).toBeLessThanOrEqual(maxAckReported);
    expect(spool.nextSeq).toBeGreaterThan(maxReported);

    const records = await spool.readFrom(0n, 10_000_000);
    const bySeq = new Map<bigint, Buffer>();
    let prev = 0n;
    for (const rec of records) {
      expect(rec.seq).toBeGreaterThan(prev); // strictly increasing: no duplicates
      prev = rec.seq;
      expect(rec.payload.equals(payloadForSeq(rec.seq)), `payload of seq ${rec.seq}`).toBe(true);
      bySeq.set(rec.seq, rec.payload);
    }

    let checked = 0;
    for (const round of rounds) {
      for (const [first, last] of round.durable) {
        for (let s = first; s <= last; s++) {
          // Acked records may legitimately be gone (their segments deleted); nothing else may be.
          if (s <= spool.ackedSeq) continue;
          if (!bySeq.has(s)) throw new Error(`seq ${s} was reported durable but is missing`);
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(1000);
    expect(spool.recovery.corruptRecords).toBe(0);
  } finally {
    await spool.close();
  }
}, 60_000);
