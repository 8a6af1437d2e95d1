import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { TelemetryService } from '@sortie/contracts';
import { createTestDatabase } from '../src/testing/test-database.ts';
import { api, createOrgAndKey, registerWideDataset, startServerProcess } from './bench-env.ts';
import { loadWideFlight } from './wide-flight.ts';
const database = await createTestDatabase();
const server = await startServerProcess(database.url);
const { apiKey, handle } = await createOrgAndKey(database.url);
const experiment = await api(server.httpUrl, apiKey, '/api/experiments/create', { name: 'q' });
const datasetId = await registerWideDataset(server.httpUrl, apiKey, experiment.id, 'x', 8);
await loadWideFlight(server.grpcPort, apiKey, experiment.id, datasetId, 8);
const client = createClient(TelemetryService, createGrpcTransport({ baseUrl: `http://127.0.0.1:${server.grpcPort}` }));
const ids = (process.env.IDS ?? '0,1,2,3,4,5,6,7').split(',');
const times: number[] = [];
for (let i = 0; i < Number(process.env.N ?? 200); i++) {
  const t0 = performance.now();
  await client.query({ datasetId, channelIds: ids, maxPointsPerChannel: 2000, columns: true }, { headers: { 'x-api-key': apiKey } });
  times.push(performance.now() - t0);
}
times.sort((a, b) => a - b);
console.log('p50', times[times.length >> 1]!.toFixed(1), 'min', times[0]!.toFixed(1));
await server.stop(); await handle.close(); await database.drop();
