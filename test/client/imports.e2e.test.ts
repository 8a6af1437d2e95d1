// `importFile` and the import and parameter methods of the typed client against the real service, through
// its package entries only: real logs from the shared fixtures sent as files, Node streams and web
// streams, with and without progress; the same bytes twice; a file that is no log, refused either way.
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { createSortieClient, SortieApiError, type ImportProgress, type SortieClient } from '@sortie/client';
import { fileFromPath } from '@sortie/client/node';
import { FIXTURE_DIR } from '@sortie/contracts/testing';
import { startTestService, type TestOrg, type TestService } from '@sortie/cloud/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const SHARED = path.join(FIXTURE_DIR, '..');
const TLOG = path.join(FIXTURE_DIR, 'arduplane-sitl-vtol.tlog');
const ULOG_EVENTS = path.join(SHARED, 'ulog', 'sample_px4_events.ulg');
const DATAFLASH = path.join(SHARED, 'dataflash', 'ardusub-small.BIN');

let t: TestService;
let org: TestOrg;
let client: SortieClient;
let experimentId: string;

beforeAll(async () => {
  t = await startTestService();
  org = await t.createOrg('client imports');
  client = createSortieClient({ baseUrl: t.url, apiKey: org.key });
  experimentId = (await client.experiments.create({ name: 'imports' })).id;
});
afterAll(() => t?.stop());

/** Progress as it came, checked to go one way: upload then import, bytes never back within a phase. */
function progressLog() {
  const seen: ImportProgress[] = [];
  return {
    seen,
    onProgress: (p: ImportProgress) => seen.push(p),
    check(size: number | null) {
      const phases = seen.map((p) => p.phase);
      expect(phases.indexOf('import')).toBeGreaterThan(0);
      expect(phases.slice(phases.indexOf('import')).every((p) => p === 'import')).toBe(true);
      for (const phase of ['upload', 'import'] as const) {
        const bytes = seen.filter((p) => p.phase === phase).map((p) => p.bytes);
        expect(bytes, phase).toEqual([...bytes].sort((a, b) => a - b));
      }
      const upload = seen.filter((p) => p.phase === 'upload');
      expect(upload[0]).toEqual({ phase: 'upload', bytes: 0, totalBytes: size, messages: 0 });
      return upload;
    },
  };
}

describe('importFile', () => {
  it('sends a file from disk streamed, telling the upload as it goes and then the import, and answers the import', async () => {
    const size = (await stat(TLOG)).size;
    const progress = progressLog();
    const answer = await client.importFile({ experimentId }, await fileFromPath(TLOG), { onProgress: progress.onProgress });
    expect(answer).toMatchObject({ experimentId, format: 'tlog', fileName: 'arduplane-sitl-vtol.tlog', bytes: size, status: 'done', duplicate: false });
    expect(answer.report!.messages).toBeGreaterThan(10_000);
    // The client's own count runs chunk by chunk to the whole file; the service's line says it arrived whole.
    const upload = progress.check(size);
    expect(upload.length).toBeGreaterThan(3);
    expect(upload.at(-1)).toEqual({ phase: 'upload', bytes: size, totalBytes: size, messages: 0 });
    const imported = progress.seen.filter((p) => p.phase === 'import');
    expect(imported.at(-1)!.messages).toBeGreaterThan(0);
    expect(imported.every((p) => p.totalBytes === size)).toBe(true);

    const { duplicate: _duplicate, ...stored } = answer;
    expect(await client.imports.get({ id: answer.id })).toEqual(stored);
    expect((await client.imports.list({ datasetId: answer.datasetId })).map((i) => i.id)).toEqual([answer.id]);
  });

  it('the same bytes again, from a Node stream without progress: the first import, duplicate', async () => {
    const [first] = await client.imports.list({ experimentId });
    const size = (await stat(TLOG)).size;
    const again = await client.importFile({ experimentId, fileName: 'copy.tlog' }, { stream: createReadStream(TLOG), size });
    expect(again).toMatchObject({ id: first!.id, datasetId: first!.datasetId, fileName: 'arduplane-sitl-vtol.tlog', duplicate: true });
    expect(await client.imports.list({ experimentId })).toHaveLength(1);
  });

  it('a web stream of unknown length: no total while it uploads, the service says the size once it arrived', async () => {
    const progress = progressLog();
    const stream = Readable.toWeb(createReadStream(ULOG_EVENTS)) as ReadableStream<Uint8Array>;
    const answer = await client.importFile({ experimentId, name: 'events', fileName: 'sample_px4_events.ulg' }, { stream }, { onProgress: progress.onProgress });
    expect(answer).toMatchObject({ format: 'ulog', duplicate: false, fileName: 'sample_px4_events.ulg' });
    const upload = progress.check(null);
    const size = (await stat(ULOG_EVENTS)).size;
    expect(upload.filter((p) => p.totalBytes === null).at(-1)!.bytes).toBe(size);
    expect(upload.at(-1)).toEqual({ phase: 'upload', bytes: size, totalBytes: size, messages: 0 });
    const listed = await client.experiments.list();
    expect(listed.find((e) => e.id === experimentId)!.datasets.find((d) => d.id === answer.datasetId)!.name).toBe('events');
  });

  it('a file that is no log is the service\'s invalid_request, with or without progress', async () => {
    const notLog = new File(['just some text, not a flight'], 'notes.txt');
    for (const options of [{}, { onProgress: () => {} }]) {
      const error = await client.importFile({ experimentId }, notLog, options).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SortieApiError);
      expect(error).toMatchObject({ status: 400, code: 'invalid_request', details: [{ field: 'body', message: 'is not a ULog, DataFlash, tlog or MAVLink file' }] });
      expect((error as SortieApiError).message).toMatch(/^the file is not a log Sortie can import \(it starts with 6a 75 73 74/);
      expect((error as SortieApiError).requestId).toMatch(/^req_/);
    }
  });

  it('an input the contract refuses is not sent (status 0), as for every method', async () => {
    const error = await client.importFile({ experimentId: 'not-an-id' }, new Blob([new Uint8Array(10)])).catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 0, code: 'invalid_request', details: [{ field: 'experimentId' }] });
    const format = await client.importFile({ experimentId, format: 'px4' as 'ulog' }, new Blob([new Uint8Array(10)])).catch((e: unknown) => e);
    expect(format).toMatchObject({ status: 0, details: [{ field: 'format' }] });
  });

  it('never gathers the body: a stream goes to fetch as a half-duplex stream, with its length', async () => {
    let seen: RequestInit | undefined;
    const stub = createSortieClient({
      baseUrl: 'http://sortie.invalid',
      apiKey: 'sk_test',
      fetch: async (_url, init) => {
        seen = init;
        return new Response('{"error":{"code":"unavailable","message":"stub","details":[],"request_id":"r1"}}', { status: 503 });
      },
    });
    const file = await fileFromPath(DATAFLASH);
    await expect(stub.importFile({ experimentId }, file, { onProgress: () => {} })).rejects.toMatchObject({ status: 503, code: 'unavailable' });
    expect(seen!.body).toBeInstanceOf(ReadableStream);
    expect((seen as { duplex?: string }).duplex).toBe('half');
    expect((seen!.headers as Record<string, string>)['content-length']).toBe(String(file.size));
    expect((seen!.headers as Record<string, string>).accept).toBe('application/x-ndjson');
    // Without progress a file needs no counting: fetch reads the Blob itself.
    await stub.importFile({ experimentId }, file).catch(() => {});
    expect(seen!.body).toBe(file);
  });
});

describe('flight parameters', () => {
  it("an imported log's parameters, and two flights compared at their start and their end", async () => {
    const dataflash = await client.importFile({ experimentId }, new File([await readFile(DATAFLASH)], 'ardusub-small.BIN'));
    const parameters = await client.datasets.parameters({ datasetId: dataflash.datasetId });
    expect(parameters.source).toBe('log');
    expect(parameters.parameters.length).toBe(dataflash.report!.parameters - dataflash.report!.parameterChanges);
    const names = parameters.parameters.map((p) => p.name);
    expect(names).toEqual([...names].sort());

    const tlog = (await client.imports.list({ experimentId })).find((i) => i.format === 'tlog');
    const diff = await client.datasets.parameterDiff({ a: tlog!.datasetId, b: dataflash.datasetId });
    expect(diff.at).toBe('initial');
    expect(diff.added.length + diff.changed.length + diff.unchanged).toBe(parameters.parameters.length);
    const final = await client.datasets.parameterDiff({ a: dataflash.datasetId, b: dataflash.datasetId, at: 'final' });
    expect(final).toMatchObject({ at: 'final', added: [], removed: [], changed: [], unchanged: parameters.parameters.length });
  });
});
