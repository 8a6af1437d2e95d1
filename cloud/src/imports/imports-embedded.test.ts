import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CreateImportResponseSchema } from '@sortie/contracts';
import { FIXTURE_DIR } from '@sortie/contracts/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestOrg, type TestService } from '../testing/test-service.ts';

// The embedded default (PGlite, text parameters: the writer's other path) imports a log too, and reads it back.

let t: TestService;
let org: TestOrg;
let experimentId: string;

beforeAll(async () => {
  t = await startTestService({ embedded: true });
  org = await t.createOrg('imports');
  experimentId = (await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'embedded' } })).body.id;
});
afterAll(() => t?.stop());

describe('imports on the embedded database', () => {
  it('a DataFlash log: every message stored, a signal exported back', async () => {
    const bytes = new Uint8Array(await readFile(join(FIXTURE_DIR, '..', 'dataflash', 'ardusub-small.BIN')));
    const response = await fetch(`${t.url}/api/imports/create?experimentId=${experimentId}&fileName=ardusub-small.BIN`, {
      method: 'POST',
      headers: { 'x-api-key': org.key },
      body: bytes as Uint8Array<ArrayBuffer>,
    });
    expect(response.status).toBe(201);
    const result = CreateImportResponseSchema.parse(await response.json());
    // 7,510 messages, less the 352 FMT, FMTU, UNIT and MULT that describe the others (DFReader's count).
    expect(result.report!.messages).toBe(7510 - 352);
    const csv = await (await fetch(`${t.url}/api/datasets/export?datasetId=${result.datasetId}&format=csv&channel=dataflash.ATT.Roll`, { headers: { 'x-api-key': org.key } })).text();
    const lines = csv.trim().split('\n');
    expect(lines[0]).toBe('time,time_unix_us,dataflash.ATT.Roll');
    expect(lines.length - 1).toBe(result.report!.types.find((x) => x.type === 'ATT')!.count);
  });
});
