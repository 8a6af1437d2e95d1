// Test support for the MAVLink framing tests (`@sortie/contracts/testing`): where the real captures are,
// a seeded PRNG and a chunked feeder; the captures' CRC_EXTRA table and the frame builder
// (frames.fixture.ts) and the synthetic flights are exported from here too.

import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

/** The real captures (read-only, outside the repo); SORTIE_MAVLINK_FIXTURES points elsewhere. */
/**
 * The shared captures live beside the repository (`../shared/fixtures/mavlink`), as on every developer
 * machine and in CI; SORTIE_MAVLINK_FIXTURES points elsewhere.
 */
export const FIXTURE_DIR = resolveFixtureDir();

function resolveFixtureDir(): string {
  const fromEnv = process.env['SORTIE_MAVLINK_FIXTURES'];
  if (fromEnv) return fromEnv;
  const besideRepo = fileURLToPath(new URL('../../../../shared/fixtures/mavlink', import.meta.url));
  return existsSync(besideRepo) ? besideRepo : '/work/shared/fixtures/mavlink';
}

export function readFixture(name: string): Uint8Array {
  return new Uint8Array(readFileSync(join(FIXTURE_DIR, name)));
}

/** Deterministic PRNG (mulberry32) so fuzz-style tests fail reproducibly. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Feeds `data` in chunks of `size` bytes (or of random sizes from `size()`), then ends the input. */
export function feed<T>(walker: { push(chunk: Uint8Array): T[]; end(): T[] }, data: Uint8Array, size: number | (() => number)): T[] {
  const out: T[] = [];
  for (let i = 0; i < data.length; ) {
    const n = typeof size === 'number' ? size : size();
    for (const item of walker.push(data.subarray(i, i + n))) out.push(item);
    i += n;
  }
  for (const item of walker.end()) out.push(item);
  return out;
}

// Frames with real CRCs, built from a message id and payload.
export * from './frames.fixture.ts';
// Synthetic flights (an ArduSub dive with a companion computer, a PX4 mission) beside the real captures.
export * from './synthetic-flights.fixture.ts';
