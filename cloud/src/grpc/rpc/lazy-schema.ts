import { clearField, clone, createFileRegistry, type DescService } from '@bufbuild/protobuf';
import {
  FieldDescriptorProto_Type,
  FieldDescriptorProtoSchema,
  FileDescriptorProtoSchema,
  file_google_protobuf_empty,
  file_google_protobuf_struct,
  file_google_protobuf_timestamp,
} from '@bufbuild/protobuf/wkt';
import { file_sortie_telemetry_v1_telemetry, type PointBatch, type StreamSessionHeader, type TelemetryPoint } from '@sortie/contracts';

/**
 * TelemetryService as the server decodes binary requests and encodes their answers: the same file
 * descriptor, except that StreamSubmitRequest.point and .batch, SubmitRequest.points and
 * QueryResponse.series are declared `bytes`. A message field and a bytes field are identical on the
 * wire, so clients see no difference. The server receives those request payloads undecoded and walks
 * them with telemetry/point-decoder.ts, and writes each Series of a Query answer itself
 * (series-wire.ts), instead of materialising a message object per point (and per timestamp). JSON
 * requests keep the generated descriptor.
 */
function lazyTelemetryService(): DescService {
  const proto = clone(FileDescriptorProtoSchema, file_sortie_telemetry_v1_telemetry.proto);
  const lazy: Record<string, number[]> = { StreamSubmitRequest: [2, 3], SubmitRequest: [3], QueryResponse: [1] };
  for (const message of proto.messageType) {
    for (const field of message.field) {
      if (!lazy[message.name]?.includes(field.number)) continue;
      field.type = FieldDescriptorProto_Type.BYTES;
      clearField(field, FieldDescriptorProtoSchema.field.typeName);
    }
  }
  const deps: Record<string, typeof file_google_protobuf_empty> = {
    'google/protobuf/empty.proto': file_google_protobuf_empty,
    'google/protobuf/struct.proto': file_google_protobuf_struct,
    'google/protobuf/timestamp.proto': file_google_protobuf_timestamp,
  };
  const registry = createFileRegistry(proto, (name) => deps[name]);
  const service = registry.getService('sortie.telemetry.v1.TelemetryService');
  if (!service) throw new Error('lazy TelemetryService descriptor missing');
  return service;
}

export const LazyTelemetryService = lazyTelemetryService();

/** A StreamSubmitRequest from either descriptor: point and batch decoded (JSON) or still encoded (binary). */
export interface AnyStreamSubmitRequest {
  message:
    | { case: 'header'; value: StreamSessionHeader }
    | { case: 'point'; value: TelemetryPoint | Uint8Array }
    | { case: 'batch'; value: PointBatch | Uint8Array }
    | { case: undefined; value?: undefined };
}

/** A SubmitRequest from either descriptor. */
export interface AnySubmitRequest {
  experimentId: string;
  datasetId: string;
  points: TelemetryPoint[] | Uint8Array[];
}

/** JSON requests (Connect, gRPC and gRPC-Web with a +json codec) go through the generated descriptor. */
export function isJsonContentType(contentType: string | undefined): boolean {
  return contentType !== undefined && /[/+]json\b/i.test(contentType);
}
