import v8 from 'node:v8';

/**
 * How far V8 lets the old generation grow past what survived the last full collection before it
 * collects again: 1.5× (V8's own factor goes up to 4× when collections look cheap next to the program).
 *
 * Why: ingest keeps every request's body alive while it awaits the database, so each body is promoted
 * and becomes old-generation garbage once answered. With V8's factor, an HTTP append flood let ~60 MB
 * of live heap grow to ~240 MB before a full collection, and the process's resident memory to ~390 MB;
 * at 1.5× the heap stays near 120 MB and the peak near 250 MB, at the price of more frequent (mostly
 * concurrent) marking (docs/PERFORMANCE.md, Memory). This is a growth factor, not a ceiling: a process
 * whose live data really grows still grows, where --max-old-space-size would crash it.
 *
 * Set at start-up by the server's entry point, so every way of starting it (npm start, the image,
 * compose, the benches) runs with it; Node refuses this flag in NODE_OPTIONS. V8 reads it each time it
 * sets the next collection's limit, which is why setting it once the VM runs takes effect
 * (bench:memory shows it).
 */
export const HEAP_GROWING_PERCENT = 50;

export function boundHeapGrowth(): void {
  v8.setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}
