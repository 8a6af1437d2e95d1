// Where the shared real MAVLink captures are, resolved as contracts/src/mavlink/mavlink.fixture.ts
// does: beside the repository (`../shared/fixtures/mavlink`), or SORTIE_MAVLINK_FIXTURES.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const FIXTURE_DIR = resolveFixtureDir();

function resolveFixtureDir(): string {
  const fromEnv = process.env['SORTIE_MAVLINK_FIXTURES'];
  if (fromEnv) return fromEnv;
  const besideRepo = fileURLToPath(new URL('../../../../shared/fixtures/mavlink', import.meta.url));
  return existsSync(besideRepo) ? besideRepo : '/work/shared/fixtures/mavlink';
}

export const FIXTURES = {
  tlog: 'arduplane-sitl-vtol.tlog',
  v2: 'ardupilot-v2.mavlink',
  px4Junk: 'px4-mixed-v1v2-junk.bin',
} as const;

export function fixturePath(name: string): string {
  return join(FIXTURE_DIR, name);
}

export function readFixture(name: string): Uint8Array {
  return new Uint8Array(readFileSync(fixturePath(name)));
}

/** Deterministic PRNG (mulberry32) so randomised tests fail reproducibly. */
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
