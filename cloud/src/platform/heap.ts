import os from 'node:os';
import v8 from 'node:v8';

/**
 * How far V8 lets the old generation grow past what survived the last full collection before it
 * collects again: 2× (V8's own factor goes up to 4× when collections look cheap next to the program).
 *
 * Why bounded: ingest keeps every request's body alive while it awaits the database, so each body is
 * promoted and becomes old-generation garbage once answered. With V8's factor, an HTTP append flood let
 * ~60 MB of live heap grow to ~240 MB before a full collection, and the process's resident memory to
 * ~390 MB (docs/PERFORMANCE.md, Memory).
 *
 * Why 2× and not less: V8 counts the external memory (ArrayBuffers: socket chunks, typed arrays, answers
 * being compressed) allocated since the last full collection against the old generation's headroom. A
 * Query of eight channels allocates ~7–8 MB of it; at 1.5× over a ~40 MB live heap the headroom was spent
 * every three or four such Queries, each time a Mark-Compact with 10–27 ms of marking on the main thread.
 * At 2×, with the young generation bounded to 2 × 8 MB (the start flags) so that scavenges free those
 * young ArrayBuffers sooner, it is one in sixteen; the append flood's peak rose ~16 MB, well under its
 * 300 MB target (docs/PERFORMANCE.md, eleventh session). This is a growth factor, not a ceiling: a process
 * whose live data really grows still grows, where --max-old-space-size would crash it.
 *
 * Set at start-up by the server's entry point (`tuneHeap`), so every way of starting it (npm start, the image,
 * compose, the benches) runs with it; Node refuses this flag in NODE_OPTIONS. V8 reads it each time it
 * sets the next collection's limit, which is why setting it once the VM runs takes effect
 * (bench:memory shows it).
 */
export const HEAP_GROWING_PERCENT = 100;

/**
 * Below this many cores, young-generation collections (scavenges) run on the main thread alone.
 *
 * V8 scavenges with helper threads, one per core, and the main thread waits for them at each step. On two
 * cores shared with PostgreSQL and NATS (this service's small deployment, and the machine it is measured
 * on) the helpers wait for a core: bench:dispatch's cloud logged scavenges of 4–12 ms of an 8 MB semi-space
 * at 200 dispatches/s, and the requests behind them made its p99. Scavenging on the main thread
 * alone, the same scavenges took 1–4 ms; over six runs against five, the median dispatch p99 fell from 41
 * to 24 ms and deliveries rose from 42 % to 56 % of the same run's floor (docs/PERFORMANCE.md, twelfth
 * session). With more cores the helpers find one free, and V8's default stands.
 */
export const PARALLEL_SCAVENGE_MIN_CORES = 3;

/** The V8 flags the entry point sets for a machine of `cores` cores (this one's by default). */
export function heapFlags(cores = os.availableParallelism()): string[] {
  const flags = [`--heap-growing-percent=${HEAP_GROWING_PERCENT}`];
  if (cores < PARALLEL_SCAVENGE_MIN_CORES) flags.push('--no-parallel-scavenge');
  return flags;
}

/** Set the heap's flags for this machine: called first by the server's entry point (V8 reads both at each collection). */
export function tuneHeap(): void {
  for (const flag of heapFlags()) v8.setFlagsFromString(flag);
}
