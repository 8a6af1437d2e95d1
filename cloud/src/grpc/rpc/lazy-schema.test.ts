import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { PointBatchSchema, StreamSubmitRequestSchema, SubmitRequestSchema, TelemetryPointSchema, TelemetryService } from '@sortie/contracts';
import { describe, expect, it } from 'vitest';
import { isJsonContentType, LazyTelemetryService } from './lazy-schema.ts';

const point = create(TelemetryPointSchema, { channelId: '2', timestamp: { seconds: 5n, nanos: 6 }, type: { case: 'double', value: 1.25 } });

describe('the lazy descriptor', () => {
  it('serves the same service and method paths as the generated one', () => {
    expect(LazyTelemetryService.typeName).toBe(TelemetryService.typeName);
    expect(LazyTelemetryService.methods.map((m) => [m.name, m.methodKind])).toEqual(TelemetryService.methods.map((m) => [m.name, m.methodKind]));
  });

  it('reads batch and point payloads as the exact bytes of the encoded messages', () => {
    const batch = create(PointBatchSchema, { points: [point, point] });
    const request = toBinary(StreamSubmitRequestSchema, create(StreamSubmitRequestSchema, { message: { case: 'batch', value: batch } }));
    const lazy = fromBinary(LazyTelemetryService.method.streamSubmit!.input, request) as unknown as { message: { case: string; value: Uint8Array } };
    expect(lazy.message.case).toBe('batch');
    expect(lazy.message.value).toEqual(toBinary(PointBatchSchema, batch));

    const submit = toBinary(SubmitRequestSchema, create(SubmitRequestSchema, { datasetId: 'd', points: [point] }));
    const lazySubmit = fromBinary(LazyTelemetryService.method.submit!.input, submit) as unknown as { datasetId: string; points: Uint8Array[] };
    expect(lazySubmit.datasetId).toBe('d');
    expect(lazySubmit.points).toEqual([toBinary(TelemetryPointSchema, point)]);
  });

  it('decodes the header normally', () => {
    const request = toBinary(StreamSubmitRequestSchema, create(StreamSubmitRequestSchema, { message: { case: 'header', value: { datasetId: 'x', format: '' } } }));
    const lazy = fromBinary(LazyTelemetryService.method.streamSubmit!.input, request) as unknown as { message: { case: string; value: { datasetId: string } } };
    expect(lazy.message.value.datasetId).toBe('x');
  });

  it('routes only JSON codecs to the generated descriptor', () => {
    expect(['application/json', 'application/connect+json', 'application/grpc+json', 'application/grpc-web+json; charset=utf-8'].map(isJsonContentType)).toEqual([true, true, true, true]);
    expect(['application/grpc', 'application/grpc+proto', 'application/proto', 'application/connect+proto', 'application/grpc-web-text', undefined].map(isJsonContentType)).toEqual([
      false, false, false, false, false, false,
    ]);
  });
});
