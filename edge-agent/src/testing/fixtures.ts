// The shared real MAVLink captures and test helpers, from contracts' fixture module (one place resolves
// where the captures are: beside the repository, or SORTIE_MAVLINK_FIXTURES).
import { join } from 'node:path';
import { FIXTURE_DIR } from '@sortie/contracts/testing';

export { FIXTURE_DIR, prng, readFixture } from '@sortie/contracts/testing';

export const FIXTURES = {
  tlog: 'arduplane-sitl-vtol.tlog',
  v2: 'ardupilot-v2.mavlink',
  px4Junk: 'px4-mixed-v1v2-junk.bin',
} as const;

export function fixturePath(name: string): string {
  return join(FIXTURE_DIR, name);
}
