import { clearField, clone, createFileRegistry, type DescService } from '@bufbuild/protobuf';
import {
  FieldDescriptorProto_Type,
  FieldDescriptorProtoSchema,
  FileDescriptorProtoSchema,
  file_google_protobuf_empty,
  file_google_protobuf_struct,
  file_google_protobuf_timestamp,
} from '@bufbuild/protobuf/wkt';
import { file_sortie_telemetry_v1_telemetry } from '../gen/index.ts';

/**
 * TelemetryService with some message fields declared `bytes`: `fields` names, per message, the field
 * numbers to leave encoded. A message field and a bytes field are the same on the wire (a length and the
 * message's bytes), so a peer sees no difference; the side using this descriptor gets those fields as
 * the bytes of the encoded message, to walk by hand instead of through protobuf-es, which builds an
 * object per message (and per Timestamp). The cloud reads request points this way and writes Query's
 * series; the client reads Query's and Follow's series. Binary format only: in JSON a message is no
 * base64 text.
 */
export function telemetryServiceWithBytesFields(fields: Readonly<Record<string, readonly number[]>>): DescService {
  const proto = clone(FileDescriptorProtoSchema, file_sortie_telemetry_v1_telemetry.proto);
  for (const message of proto.messageType) {
    for (const field of message.field) {
      if (!fields[message.name]?.includes(field.number)) continue;
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
  if (!service) throw new Error('TelemetryService missing from its own file descriptor');
  return service;
}
