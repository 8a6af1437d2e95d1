import { PassThrough } from 'node:stream';
import { run } from '@sortie/cli';
import { startTestService, type TestOrg, type TestService } from '@sortie/cloud/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// `sortie experiments create` through `run` (what the bin calls) against the real service: the first
// thing a newcomer makes before the edge agent's first flight, which takes the id it prints.
let t: TestService;
let org: TestOrg;

class Capture extends PassThrough {
  text = '';
  constructor() {
    super();
    this.on('data', (chunk: Buffer) => (this.text += chunk.toString()));
  }
}

async function sortie(args: string[], key = org.key) {
  const stdout = new Capture();
  const stderr = new Capture();
  const code = await run(args, { env: { SORTIE_URL: t.url, SORTIE_API_KEY: key }, stdout, stderr });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

beforeAll(async () => {
  t = await startTestService();
  org = await t.createOrg('cli experiments');
});
afterAll(() => t?.stop());

describe('sortie experiments create', () => {
  it('creates an experiment, prints its id as a record (or JSON), and the listing shows it', async () => {
    const created = await sortie(['experiments', 'create', 'Hover test 12', '--description', 'first flights of the new frame']);
    expect(created.code, created.stderr).toBe(0);
    const id = /^id\s+([0-9a-f-]{36})$/m.exec(created.stdout)?.[1];
    expect(id, created.stdout).toBeDefined();
    expect(created.stdout).toMatch(/^name\s+Hover test 12$/m);
    expect(created.stdout).toMatch(/^description\s+first flights of the new frame$/m);
    // The next step is named on stderr, so stdout stays the record a script reads.
    expect(created.stderr).toContain(`--experiment ${id}`);

    const asJson = await sortie(['experiments', 'create', 'Hover test 13', '--json']);
    expect(asJson.code, asJson.stderr).toBe(0);
    const experiment = JSON.parse(asJson.stdout);
    expect(experiment).toMatchObject({ name: 'Hover test 13', description: '', datasets: [] });
    expect(asJson.stderr).toBe('');

    const listed = await sortie(['experiments']);
    expect(listed.stdout).toMatch(new RegExp(`^${id}\\s+Hover test 12\\s+0\\s`, 'm'));
    expect(listed.stdout).toMatch(new RegExp(`^${experiment.id}\\s+Hover test 13\\s+0\\s`, 'm'));
  });

  it('a name the contract refuses is a usage error (2) and nothing is sent; without the name, the usage', async () => {
    const blank = await sortie(['experiments', 'create', '   ']);
    expect(blank.code).toBe(2);
    expect(blank.stderr).toMatch(/name/);
    const tooLong = await sortie(['experiments', 'create', 'x'.repeat(201)]);
    expect(tooLong.code).toBe(2);
    const missing = await sortie(['experiments', 'create']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('usage: sortie experiments create <name>');
    const listed = JSON.parse((await sortie(['experiments', '--json'])).stdout) as Array<{ name: string }>;
    expect(listed.map((e) => e.name)).not.toContain('   ');
  });

  it('a key without datasets:write is refused (4)', async () => {
    const { apiKey } = await org.keyWith(['datasets:read']);
    const refused = await sortie(['experiments', 'create', 'not mine to make'], apiKey);
    expect(refused.code).toBe(4);
    expect(refused.stderr).toMatch(/403 insufficient_scope/);
  });
});
