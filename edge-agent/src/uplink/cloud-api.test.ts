// The agent's HTTP client (@sortie/client underneath) against a stubbed fetch: the exact requests it
// sends, and how it reads the cloud's answers through the contracts' schemas (a body the contract does
// not allow fails clearly), and how each failure is classified for the back-off.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CloudHttpError, HttpCloudApi, classifyFailure, describeFailure } from './cloud-api.ts';

const EXPERIMENT = '6f1c2b8e-3d4a-4c5b-9e6f-7a8b9c0d1e2f';
const DATASET = '0d9e8f7a-6b5c-4d3e-8f1a-2b3c4d5e6f70';
const EVENT_ID = '1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d';

interface Sent {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: unknown;
}

/** Answers every request with `status` and `body` (JSON unless a string), recording what was sent. */
function stubCloud(status: number, body: unknown): Sent[] {
  const sent: Sent[] = [];
  vi.stubGlobal('fetch', async (url: string, init: RequestInit) => {
    sent.push({
      url,
      method: init.method!,
      headers: init.headers as Record<string, string>,
      body: typeof init.body === 'string' ? JSON.parse(init.body) : init.body,
    });
    return new Response(typeof body === 'string' ? body : JSON.stringify(body), { status });
  });
  return sent;
}

const api = () => new HttpCloudApi({ baseUrl: 'http://cloud.test/', apiKey: 'sk_test', experimentId: EXPERIMENT });

async function failure(call: Promise<unknown>): Promise<CloudHttpError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(CloudHttpError);
  return error as CloudHttpError;
}

const registered = {
  experimentId: EXPERIMENT,
  datasetId: DATASET,
  datasetName: 'flight-7-sys1',
  storageShape: 'narrow',
  created: true,
  addedColumns: [],
  channels: [],
};

const stored = {
  id: EVENT_ID,
  datasetId: DATASET,
  timestamp: '2018-08-08T10:00:00.000Z',
  kind: 'LINK_LOSS',
  message: 'vehicle link lost',
  data: { key: 'k1' },
  createdAt: '2026-01-01T00:00:00.000Z',
};

afterEach(() => {
  vi.unstubAllGlobals();
});

describe('HttpCloudApi', () => {
  it('registers a narrow dataset with the body it always sent, and answers the dataset id', async () => {
    const sent = stubCloud(201, registered);
    expect(await api().registerNarrowDataset('flight-7-sys1')).toBe(DATASET);
    expect(sent).toEqual([
      {
        url: 'http://cloud.test/api/streams/register',
        method: 'POST',
        headers: { 'x-api-key': 'sk_test', 'content-type': 'application/json', 'x-request-id': expect.stringMatching(/^req_[0-9a-f]{32}$/) },
        body: {
          experimentId: EXPERIMENT,
          datasetName: 'flight-7-sys1',
          storageShape: 'narrow',
          codec: 'mavlink',
          dialect: 'ardupilotmega',
          format: 'mavlink-raw-v1',
        },
      },
    ]);
  });

  it('fails with bad_response, naming the field, when a 2xx answer breaks the contract', async () => {
    stubCloud(200, { ...registered, datasetId: undefined });
    const error = await failure(api().registerNarrowDataset('flight-7-sys1'));
    expect(error).toMatchObject({ status: 200, code: 'bad_response' });
    expect(error.message).toMatch(/^registerStream: the answer does not match the contract \(datasetId: /);
    // Another version of the cloud may be rolled back or forward: retry, on the short back-off.
    expect(classifyFailure(error)).toEqual({ permanent: false, label: 'HTTP 200 bad_response' });

    stubCloud(200, '<html>gateway</html>');
    expect(await failure(api().registerNarrowDataset('x'))).toMatchObject({ status: 200, code: 'bad_response' });
  });

  it('a body the contract refuses is not sent, and a retry will not help', async () => {
    const sent = stubCloud(201, registered);
    const error = await failure(api().registerNarrowDataset(''));
    expect(error).toMatchObject({ status: 0, code: 'invalid_request', details: [{ field: 'datasetName', message: expect.any(String) }] });
    expect(sent).toEqual([]);
    expect(classifyFailure(error)).toEqual({ permanent: true, label: 'not sent: invalid_request' });
  });

  it('takes the status and the stable code of an error envelope', async () => {
    stubCloud(403, { error: { code: 'insufficient_scope', message: 'needs datasets:write', details: [], request_id: 'req-1' } });
    const error = await failure(api().registerNarrowDataset('flight-7-sys1'));
    expect(error).toMatchObject({ status: 403, code: 'insufficient_scope', message: 'needs datasets:write', requestId: 'req-1' });
    expect(describeFailure(error)).toBe('403 insufficient_scope: needs datasets:write (request id req-1)');
    expect(classifyFailure(error)).toEqual({ permanent: true, label: 'HTTP 403 insufficient_scope' });
  });

  it('keeps the status of an error answer that is no envelope (a proxy page), with the start of its text', async () => {
    stubCloud(503, 'upstream connect error');
    const error = await failure(api().listEvents(DATASET, 'LINK_LOSS'));
    expect(error).toMatchObject({ status: 503, code: 'http_error', message: 'GET /api/datasets/events: HTTP 503: upstream connect error' });
    expect(classifyFailure(error).permanent).toBe(false);
  });

  it('posts annotations as given and reads the stored ones back', async () => {
    const sent = stubCloud(201, { events: [stored] });
    const event = { timestamp: stored.timestamp, kind: 'LINK_LOSS', message: 'vehicle link lost', data: { key: 'k1' } };
    await api().postEvents(DATASET, [event]);
    expect(sent[0]).toMatchObject({ url: 'http://cloud.test/api/datasets/events', method: 'POST', body: { experimentId: EXPERIMENT, datasetId: DATASET, events: [event] } });

    const listed = stubCloud(200, [stored]);
    expect(await api().listEvents(DATASET, 'LINK_LOSS')).toEqual([stored]);
    expect(listed[0]).toMatchObject({
      url: `http://cloud.test/api/datasets/events?datasetId=${DATASET}&experimentId=${EXPERIMENT}&kind=LINK_LOSS`,
      method: 'GET',
      headers: { 'x-api-key': 'sk_test', 'x-request-id': expect.stringMatching(/^req_/) },
      body: undefined,
    });
  });

  it('fails with bad_response when the list of annotations is not one', async () => {
    stubCloud(200, { events: [stored] });
    const error = await failure(api().listEvents(DATASET, 'LINK_LOSS'));
    expect(error).toMatchObject({ status: 200, code: 'bad_response' });
    expect(error.message).toContain('listEvents: the answer does not match the contract (body: ');

    stubCloud(200, [{ ...stored, data: 'not an object' }]);
    expect((await failure(api().listEvents(DATASET, 'LINK_LOSS'))).message).toContain('([0].data: ');
  });
});
