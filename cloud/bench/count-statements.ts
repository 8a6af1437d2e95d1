/**
 * Preloaded into the cloud child by `npm run bench:dispatch` (NODE_OPTIONS=--import): counts every
 * statement the cloud sends to PostgreSQL (one node-postgres query is one round trip), by statement
 * shape, and writes the counts so far to BENCH_STATEMENTS_FILE on SIGUSR2. The bench reads them around
 * a phase and divides by the dispatches: statements and round trips per dispatch, with no
 * pg_stat_statements (which needs a server restart to load) and nothing in the product's code.
 */
import { writeFileSync } from 'node:fs';
import pg from 'pg';

const file = process.env.BENCH_STATEMENTS_FILE;
const counts = new Map<string, number>();

/** A statement's shape: its text with whitespace folded, cut to what tells statements apart. */
function shape(text: string): string {
  return text.replace(/\s+/g, ' ').trim().slice(0, 120);
}

// Counted by the text itself (one map lookup per statement); shaped only when written out.
const query = pg.Client.prototype.query as (...args: unknown[]) => unknown;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  const first = args[0];
  const text = typeof first === 'string' ? first : typeof (first as { text?: unknown })?.text === 'string' ? (first as { text: string }).text : '(other)';
  counts.set(text, (counts.get(text) ?? 0) + 1);
  return query.apply(this, args);
} as typeof pg.Client.prototype.query;

if (file) {
  process.on('SIGUSR2', () => {
    const shaped: Record<string, number> = {};
    for (const [text, n] of counts) shaped[shape(text)] = (shaped[shape(text)] ?? 0) + n;
    writeFileSync(file, JSON.stringify({ at: Date.now(), counts: shaped }));
  });
}
