// What tests outside the agent (test/, the cloud's benchmarks) use to drive it: the real CLI as a child
// process and the shared MAVLink captures.
export { startAgentProcess } from './agent-process.ts';
export type { AgentProcess } from './agent-process.ts';
export { FIXTURE_DIR, FIXTURES, fixturePath, prng, readFixture } from './fixtures.ts';
