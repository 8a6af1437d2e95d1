/**
 * Seed and size of a fuzz run: SORTIE_FUZZ_SEED replays a run exactly (with the same SORTIE_FUZZ_RUNS);
 * SORTIE_FUZZ_RUNS sets the cases per route and per RPC and protocol. CI runs the default.
 */
export function fuzzSettings(defaultRuns: number): { seed: number; runs: number } {
  const seed = process.env.SORTIE_FUZZ_SEED ? Number(process.env.SORTIE_FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);
  const runs = process.env.SORTIE_FUZZ_RUNS ? Number(process.env.SORTIE_FUZZ_RUNS) : defaultRuns;
  if (!Number.isSafeInteger(seed) || !Number.isSafeInteger(runs) || runs < 1) throw new Error('SORTIE_FUZZ_SEED and SORTIE_FUZZ_RUNS are integers');
  return { seed, runs };
}

/** A per-target seed, so one route's cases do not depend on which other routes exist. */
export function seedFor(seed: number, target: string): number {
  let h = seed >>> 0;
  for (const c of target) h = Math.imul(h ^ c.charCodeAt(0), 0x01000193) >>> 0;
  return h & 0x7fffffff;
}

/** What went wrong in one case, for the closing report. */
export interface FuzzFailure {
  target: string;
  kind: '5xx' | 'bare' | 'hang' | 'crash';
  detail: string;
  request: string;
}

export function summarize(label: string, cases: number, failures: FuzzFailure[]): string {
  const count = (kind: FuzzFailure['kind']) => failures.filter((f) => f.kind === kind).length;
  return `${label}: ${cases} cases, ${count('5xx')} 5xx, ${count('bare')} bare errors, ${count('hang')} hangs, ${count('crash')} crashes`;
}
