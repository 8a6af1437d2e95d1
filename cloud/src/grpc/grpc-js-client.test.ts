import { join, resolve } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestOrg, type TestService } from '../testing/test-service.ts';

// A second, independent client: @grpc/grpc-js with the .proto loaded at run time by proto-loader
// (protobufjs), sharing no code with the server's Connect-ES stack. It proves wire compatibility.

const protoRoot = resolve(import.meta.dirname, '../../../proto');
const definition = loadSync(join(protoRoot, 'sortie/telemetry/v1/telemetry.proto'), {
  includeDirs: [protoRoot],
  keepCase: false,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
});
const loaded = grpc.loadPackageDefinition(definition) as any;

type Callback<T> = (error: grpc.ServiceError | null, value?: T) => void;
interface TelemetryStub extends grpc.Client {
  submit(request: object, metadata: grpc.Metadata, callback: Callback<any>): void;
  streamSubmit(metadata: grpc.Metadata, callback: Callback<any>): grpc.ClientWritableStream<object>;
  query(request: object, metadata: grpc.Metadata, callback: Callback<any>): void;
}

let t: TestService;
let org: TestOrg;
let stub: TelemetryStub;
let experimentId: string;
let datasetId: string;
let channelUuid: string;

const metadata = (key?: string) => {
  const m = new grpc.Metadata();
  if (key) m.set('x-api-key', key);
  return m;
};
const unary = <T>(fn: (cb: Callback<T>) => void) =>
  new Promise<T>((resolvePromise, reject) => fn((error, value) => (error ? reject(error) : resolvePromise(value as T))));

/** A point as protobufjs takes it: the oneof member is simply the field that is set. */
const point = (channelId: string, second: number, member: Record<string, unknown>) => ({ channelId, timestamp: { seconds: String(1_785_000_000 + second), nanos: 250_000_000 }, ...member });

beforeAll(async () => {
  t = await startTestService();
  org = await t.createOrg();
  const experiment = await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'grpc-js' } });
  experimentId = experiment.body.id;
  const registered = await t.call('POST', '/api/streams/register', {
    key: org.key,
    body: {
      experimentId,
      datasetName: 'grpc-js',
      channels: [
        { name: 'pressure', unit: 'Pa', dataType: 'double' },
        { name: 'counter', unit: '', dataType: 'uint64' },
        { name: 'flags', unit: '', dataType: 'bit_field' },
      ],
    },
  });
  datasetId = registered.body.datasetId;
  channelUuid = registered.body.channels[0].id;
  stub = new loaded.sortie.telemetry.v1.TelemetryService(`127.0.0.1:${t.service.grpcPort}`, grpc.credentials.createInsecure()) as TelemetryStub;
});
afterAll(async () => {
  stub?.close();
  await t?.stop();
});

describe('@grpc/grpc-js client with the .proto loaded at run time', () => {
  it('Submit: writes, and reports the channel-UUID trap in the counts', async () => {
    const response = await unary<Record<string, unknown>>((cb) =>
      stub.submit(
        {
          experimentId,
          datasetId,
          points: [
            point('0', 1, { double: 101325.5 }),
            point('1', 1, { uint64: '18446744073709551615' }),
            point('2', 1, { bitField: Buffer.from([0b101]) }),
            point(channelUuid, 2, { double: 1 }),
          ],
        },
        metadata(org.key),
        cb,
      ),
    );
    expect(response).toMatchObject({ accepted: '4', written: '3', ignored: '1', ignoredChannelIds: [channelUuid] });
  });

  it('StreamSubmit: header, a batch and single points; counts cover the whole stream', async () => {
    const response = await unary<Record<string, unknown>>((cb) => {
      const call = stub.streamSubmit(metadata(org.key), cb);
      call.write({ header: { experimentId, datasetId } });
      call.write({ batch: { points: Array.from({ length: 100 }, (_, i) => point('0', 10 + i, { double: Math.sin(i) })) } });
      call.write({ point: point('0', 10, { double: 7 }) });
      call.write({ point: point('1', 200, { uint64: '42' }) });
      call.end();
    });
    expect(response).toMatchObject({ accepted: '102', written: '101', duplicates: '1', ignored: '0', messages: '4' });
  });

  it('Query: downsampled points and exact raw counts', async () => {
    const response = await unary<{ series: Array<{ channelId: string; rawPoints: string; points: Array<{ timestamp: { seconds: string; nanos: number }; value: number }> }>; totalRawPoints: string }>(
      (cb) => stub.query({ experimentId, datasetId, channelIds: ['0', '1'], maxPointsPerChannel: 20 }, metadata(org.key), cb),
    );
    expect(response.series.map((s) => [s.channelId, s.rawPoints])).toEqual([
      ['0', '101'],
      ['1', '2'],
    ]);
    expect(response.totalRawPoints).toBe('103');
    const pressure = response.series[0]!.points;
    expect(pressure.length).toBeLessThanOrEqual(20);
    expect(pressure[0]).toEqual({ timestamp: { seconds: String(1_785_000_001), nanos: 250_000_000 }, value: 101325.5 });
    expect(response.series[1]!.points.map((p) => p.value)).toEqual([18446744073709551615, 42]);
  });

  it('gets gRPC status codes: INVALID_ARGUMENT for a stream without header, UNAUTHENTICATED without a key', async () => {
    const noHeader = unary((cb) => {
      const call = stub.streamSubmit(metadata(org.key), cb);
      call.write({ point: point('0', 300, { double: 1 }) });
      call.end();
    });
    await expect(noHeader).rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT });
    await expect(unary((cb) => stub.query({ datasetId, channelIds: ['0'] }, metadata(), cb))).rejects.toMatchObject({
      code: grpc.status.UNAUTHENTICATED,
    });
  });
});
