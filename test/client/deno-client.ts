/**
 * `@sortie/client` under Deno: run by client.e2e.test.ts with `deno run` against a service the test
 * started (SORTIE_URL, SORTIE_API_KEY); prints one JSON line of what it saw, which the test compares.
 */
import { createSortieClient, SortieApiError } from '@sortie/client';
import { createStreamSubmitClient } from '@sortie/client/node';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const client = createSortieClient({ baseUrl: env('SORTIE_URL'), apiKey: env('SORTIE_API_KEY') });
const experiment = await client.experiments.create({ name: 'from deno' });
const dataset = await client.datasets.register({ experimentId: experiment.id, datasetName: 'deno', channels: [{ name: 'xval' }] });
const appended = await client.datasets.append({
  experimentId: experiment.id,
  datasetId: dataset.datasetId,
  rows: [
    { timestamp: '2026-01-01T00:00:00Z', values: { xval: 1.5 } },
    { timestamp: '2026-01-01T00:00:01Z', values: { xval: 2.5 } },
  ],
});
const submitted = await client.telemetry.submit({
  experimentId: experiment.id,
  datasetId: dataset.datasetId,
  points: [{ timestamp: { seconds: 1_767_225_602n, nanos: 0 }, channelId: '0', type: { case: 'double', value: 3.5 } }],
});
// StreamSubmit over gRPC (HTTP/2) from the Node entry, on Deno's node:http2.
const streamed = await createStreamSubmitClient({ grpcUrl: env('SORTIE_GRPC_URL'), apiKey: env('SORTIE_API_KEY') }).streamSubmit(
  { experimentId: experiment.id, datasetId: dataset.datasetId },
  [{ points: [{ timestamp: { seconds: 1_767_225_603n, nanos: 0 }, channelId: '0', type: { case: 'double', value: 4.5 } }] }],
);
const queried = await client.telemetry.query({ experimentId: experiment.id, datasetId: dataset.datasetId, channelIds: ['0'] });
const notFound = await client.channels.list({ datasetId: '00000000-0000-4000-8000-000000000000' }).catch((e: unknown) => e as SortieApiError);
const invalid = await client.experiments.create({ name: '' }).catch((e: unknown) => e as SortieApiError);
console.log(
  JSON.stringify({
    runtime: 'Deno' in globalThis ? 'deno' : 'node',
    registered: dataset.created,
    appended,
    // Plain data: printed as the client answered it, with nothing converted here.
    submitted,
    streamed,
    queried: queried.series[0]!.points,
    notFound: notFound instanceof SortieApiError ? { status: notFound.status, code: notFound.code } : 'no error',
    invalidLocally: invalid instanceof SortieApiError ? { status: invalid.status, fields: invalid.details.map((d) => d.field) } : 'no error',
  }),
);
