// Durable append throughput of the spool: group commit vs. one fsync per record.
//   node edge-agent/src/spool/spool.bench.ts [dir-on-the-disk-to-measure]
// Every rate counts only records known to be on disk when the clock stops.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { Spool } from './spool.ts';

const PAYLOAD = Buffer.alloc(40, 0xfd);
const parent = process.argv[2] ?? tmpdir();

async function withSpool<T>(name: string, run: (spool: Spool) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(parent, `spool-bench-${name}-`));
  const spool = await Spool.open({ dir });
  try {
    return await run(spool);
  } finally {
    await spool.close();
    await rm(dir, { recursive: true, force: true });
  }
}

function nowUs(): number {
  return Math.round(performance.timeOrigin * 1000 + performance.now() * 1000);
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;
}

/** A source delivering frames as fast as the spool takes them, in bursts per event-loop turn (as a
 *  serial port's 'data' events would); durability by the spool's own group commit. */
async function streaming(seconds: number) {
  return withSpool('stream', async (spool) => {
    const start = performance.now();
    const stopAt = start + seconds * 1000;
    let n = 0;
    while (performance.now() < stopAt) {
      for (let i = 0; i < 200; i++) spool.append(PAYLOAD, nowUs());
      n += 200;
      await yieldToLoop();
    }
    await spool.flush();
    const elapsed = (performance.now() - start) / 1000;
    const st = spool.stats();
    if (st.flushed !== n || st.dropped !== 0) throw new Error(`flushed ${st.flushed} of ${n}, dropped ${st.dropped}`);
    return { records: n, elapsed, rate: n / elapsed, batches: st.batches, fsyncs: st.fsyncs };
  });
}

/** `callers` concurrent producers, each waiting for its own record to be durable before the next. */
async function concurrentDurable(seconds: number, callers: number) {
  return withSpool(`durable${callers}`, async (spool) => {
    const start = performance.now();
    const stopAt = start + seconds * 1000;
    const latencies: number[] = [];
    let n = 0;
    await Promise.all(
      Array.from({ length: callers }, async () => {
        while (performance.now() < stopAt) {
          const t0 = performance.now();
          await spool.appendDurable(PAYLOAD, nowUs());
          latencies.push(performance.now() - t0);
          n++;
        }
      }),
    );
    const elapsed = (performance.now() - start) / 1000;
    const st = spool.stats();
    latencies.sort((a, b) => a - b);
    return {
      records: n,
      elapsed,
      rate: n / elapsed,
      batches: st.batches,
      fsyncs: st.fsyncs,
      p50ms: pct(latencies, 0.5),
      p99ms: pct(latencies, 0.99),
    };
  });
}

const fmt = (x: number): string => Math.round(x).toLocaleString('en-US');

console.log(`spool bench: 40-byte payloads (64 bytes on disk), directory under ${parent}`);

const base = await concurrentDurable(1, 1);
console.log(
  `baseline, one fsync per record (1 caller awaiting appendDurable, ${base.elapsed.toFixed(1)} s): ` +
    `${fmt(base.rate)} appends/s, ${base.fsyncs} fsyncs, p50 ${base.p50ms.toFixed(3)} ms`,
);

const stream = await streaming(3);
console.log(
  `group commit, streaming append + flush (${stream.elapsed.toFixed(1)} s): ${fmt(stream.rate)} durable appends/s, ` +
    `${stream.batches} batches (${fmt(stream.records / stream.batches)} records/batch), ${stream.fsyncs} fsyncs`,
);

const conc = await concurrentDurable(3, 256);
console.log(
  `group commit, 256 callers awaiting appendDurable (${conc.elapsed.toFixed(1)} s): ${fmt(conc.rate)} durable appends/s, ` +
    `${conc.batches} batches (${fmt(conc.records / conc.batches)} records/batch), ` +
    `p50 ${conc.p50ms.toFixed(2)} ms, p99 ${conc.p99ms.toFixed(2)} ms`,
);

console.log(`ratio streaming / baseline: ${(stream.rate / base.rate).toFixed(1)}x`);
console.log(`ratio 256 callers / baseline: ${(conc.rate / base.rate).toFixed(1)}x`);
