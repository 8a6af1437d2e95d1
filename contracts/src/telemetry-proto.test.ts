import { join, resolve } from 'node:path';
import { create, equals, fromBinary, toBinary } from '@bufbuild/protobuf';
import type { DescMessage, MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { BinaryReader } from '@bufbuild/protobuf/wire';
import { loadSync } from '@grpc/proto-loader';
import { describe, expect, it } from 'vitest';
import {
  FollowEventSchema,
  FollowRequestSchema,
  FollowUpdateSchema,
  PointBatchSchema,
  QueryRequestSchema,
  QueryResponseSchema,
  SeriesPointSchema,
  SeriesSchema,
  StreamSessionHeaderSchema,
  StreamSubmitRequestSchema,
  StreamSubmitResponseSchema,
  SubmitRequestSchema,
  SubmitResponseSchema,
  TelemetryPointSchema,
  TelemetryService,
} from './gen/index.ts';

// The wire contract is fixed by the spec's field numbers; clients outside this repository (and the
// edge agent built from an older commit) depend on them. These tests pin the numbers on the wire,
// not just in our own generated code.

const WIRE = { varint: 0, fixed64: 1, len: 2, fixed32: 5 } as const;

/** [fieldNo, wireType] of every top-level field in encoding order. */
function wireTags(bytes: Uint8Array): Array<[number, number]> {
  const reader = new BinaryReader(bytes);
  const tags: Array<[number, number]> = [];
  while (reader.pos < reader.len) {
    const [fieldNo, wireType] = reader.tag();
    tags.push([fieldNo, wireType]);
    reader.skip(wireType);
  }
  return tags;
}

function roundTrip<Desc extends DescMessage>(schema: Desc, init: MessageInitShape<Desc>) {
  const message = create(schema, init);
  const bytes = toBinary(schema, message);
  const decoded = fromBinary(schema, bytes);
  expect(equals(schema, decoded, message)).toBe(true);
  return { message, bytes, decoded };
}

function fieldNumbers(schema: DescMessage): Record<string, number> {
  return Object.fromEntries(schema.fields.map((f) => [f.name, f.number]));
}

describe('TelemetryPoint', () => {
  // One row per oneof member: spec name, generated `case`, a non-default value, field number, wire type.
  const members = [
    { name: 'string', case: 'string', value: 'hello', no: 3, wire: WIRE.len },
    { name: 'double', case: 'double', value: 1.5, no: 4, wire: WIRE.fixed64 },
    { name: 'float', case: 'float', value: 0.25, no: 5, wire: WIRE.fixed32 },
    { name: 'bool', case: 'bool', value: true, no: 6, wire: WIRE.varint },
    { name: 'int32', case: 'int32', value: -7, no: 7, wire: WIRE.varint },
    { name: 'uint32', case: 'uint32', value: 4_000_000_000, no: 8, wire: WIRE.varint },
    { name: 'int64', case: 'int64', value: -(2n ** 62n), no: 9, wire: WIRE.varint },
    { name: 'uint64', case: 'uint64', value: 2n ** 64n - 1n, no: 10, wire: WIRE.varint },
    { name: 'bit_field', case: 'bitField', value: new Uint8Array([0b1010_0001, 0x80]), no: 11, wire: WIRE.len },
    { name: 'enum', case: 'enum', value: 3, no: 12, wire: WIRE.varint },
    { name: 'empty', case: 'empty', value: {}, no: 13, wire: WIRE.len },
    { name: 'bytes', case: 'bytes', value: new Uint8Array([0xfd, 0x09, 0x00]), no: 14, wire: WIRE.len },
  ] as const;

  it('declares the spec field numbers', () => {
    expect(fieldNumbers(TelemetryPointSchema)).toEqual({
      timestamp: 1,
      channel_id: 2,
      string: 3,
      double: 4,
      float: 5,
      bool: 6,
      int32: 7,
      uint32: 8,
      int64: 9,
      uint64: 10,
      bit_field: 11,
      enum: 12,
      empty: 13,
      bytes: 14,
      frame_seq: 15,
    });
    const oneof = TelemetryPointSchema.oneofs.find((o) => o.name === 'type');
    expect(oneof?.fields.map((f) => f.localName)).toEqual(members.map((m) => m.case));
    expect(oneof?.fields.map((f) => f.name)).toEqual(members.map((m) => m.name));
  });

  for (const member of members) {
    it(`round-trips the ${member.name} member as field ${member.no}`, () => {
      const init = {
        timestamp: timestampFromDate(new Date('2025-06-01T12:00:00.123Z')),
        channelId: '7',
        type: { case: member.case, value: member.value },
      } as MessageInitShape<typeof TelemetryPointSchema>;
      const { bytes, decoded } = roundTrip(TelemetryPointSchema, init);
      expect(wireTags(bytes)).toEqual([
        [1, WIRE.len],
        [2, WIRE.len],
        [member.no, member.wire],
      ]);
      expect(decoded.type.case).toBe(member.case);
      expect(decoded.channelId).toBe('7');
    });

    it(`encodes a zero-valued ${member.name} member (oneof presence survives the wire)`, () => {
      const zero =
        typeof member.value === 'bigint' ? 0n
        : typeof member.value === 'number' ? 0
        : typeof member.value === 'boolean' ? false
        : typeof member.value === 'string' ? ''
        : member.value instanceof Uint8Array ? new Uint8Array()
        : {};
      const init = { type: { case: member.case, value: zero } } as MessageInitShape<typeof TelemetryPointSchema>;
      const { bytes, decoded } = roundTrip(TelemetryPointSchema, init);
      expect(wireTags(bytes)).toEqual([[member.no, member.wire]]);
      expect(decoded.type.case).toBe(member.case);
    });
  }

  it('puts a double on the wire as tag (4<<3)|1 followed by 8 little-endian bytes', () => {
    const bytes = toBinary(TelemetryPointSchema, create(TelemetryPointSchema, { type: { case: 'double', value: 1.5 } }));
    const expected = new Uint8Array(9);
    expected[0] = (4 << 3) | 1;
    new DataView(expected.buffer).setFloat64(1, 1.5, true);
    expect(bytes).toEqual(expected);
  });

  it('puts frame_seq on the wire as field 15 (varint) next to a raw MAVLink frame in bytes (14)', () => {
    // Shaped like a MAVLink v2 HEARTBEAT frame (10-byte header, 9-byte payload, 2 CRC bytes); the contract
    // carries the bytes untouched, so whether the CRC is right does not matter here.
    const frame = Uint8Array.from([
      0xfd, 0x09, 0x00, 0x00, 0x2a, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0x51, 0x04,
      0x03, 0x1c, 0x7f,
    ]);
    const { bytes, decoded } = roundTrip(TelemetryPointSchema, {
      timestamp: timestampFromDate(new Date('2025-06-01T12:00:00Z')),
      type: { case: 'bytes', value: frame },
      frameSeq: 2n ** 40n + 3n,
    });
    expect(wireTags(bytes)).toEqual([
      [1, WIRE.len],
      [14, WIRE.len],
      [15, WIRE.varint],
    ]);
    // After the timestamp (tag, length, body) comes field 14, wire type 2: tag 0x72, length, frame untouched.
    const at = 2 + (bytes[1] ?? 0);
    expect(bytes[at]).toBe(0x72);
    expect(bytes[at + 1]).toBe(frame.length);
    expect(bytes.subarray(at + 2, at + 2 + frame.length)).toEqual(frame);
    expect(decoded.frameSeq).toBe(2n ** 40n + 3n);
    expect(decoded.channelId).toBe('');
  });
});

describe('QueryRequest', () => {
  it('declares the spec field numbers', () => {
    expect(fieldNumbers(QueryRequestSchema)).toEqual({
      experiment_id: 1,
      dataset_id: 2,
      channel_ids: 3,
      from: 4,
      to: 5,
      max_points_per_channel: 6,
      columns: 7,
    });
  });

  it('round-trips with every field on the wire under its spec number', () => {
    const { bytes, decoded } = roundTrip(QueryRequestSchema, {
      experimentId: 'exp-1',
      datasetId: 'ds-1',
      channelIds: ['0', '3', 'mavlink.ATTITUDE.roll'],
      from: timestampFromDate(new Date('2025-06-01T00:00:00Z')),
      to: timestampFromDate(new Date('2025-06-01T01:00:00Z')),
      maxPointsPerChannel: 2000,
    });
    expect(wireTags(bytes)).toEqual([
      [1, WIRE.len],
      [2, WIRE.len],
      [3, WIRE.len],
      [3, WIRE.len],
      [3, WIRE.len],
      [4, WIRE.len],
      [5, WIRE.len],
      [6, WIRE.varint],
    ]);
    expect(decoded.channelIds).toEqual(['0', '3', 'mavlink.ATTITUDE.roll']);
    expect(decoded.maxPointsPerChannel).toBe(2000);
    expect(decoded.from?.seconds).toBe(BigInt(Date.parse('2025-06-01T00:00:00Z') / 1000));
  });
});

describe('Follow messages', () => {
  it('keep the field numbers the contract documents', () => {
    expect(fieldNumbers(FollowRequestSchema)).toEqual({ experiment_id: 1, dataset_id: 2, channel_ids: 3, window_ms: 4, max_points_per_window: 5 });
    expect(fieldNumbers(FollowUpdateSchema)).toEqual({ reset: 1, series: 2, head: 3, events: 4, commands: 5, dropped: 6 });
    expect(fieldNumbers(FollowEventSchema)).toEqual({ id: 1, time: 2, kind: 3, message: 4, data: 5 });
  });

  it('carries an event\'s data and a command as JSON objects (google.protobuf.Struct)', () => {
    const { decoded } = roundTrip(FollowUpdateSchema, {
      reset: true,
      events: [{ id: 'e', kind: 'LIMIT', data: { severity: 'critical', worstValue: 1.5, end: null, active: true } }],
      commands: [{ id: 'c', status: 'acked', args: { altitude: 30 } }],
      dropped: 2n,
    });
    expect(decoded.events[0]!.data).toEqual({ severity: 'critical', worstValue: 1.5, end: null, active: true });
    expect(decoded.commands[0]).toEqual({ id: 'c', status: 'acked', args: { altitude: 30 } });
    expect(decoded.dropped).toBe(2n);
  });
});

describe('other messages', () => {
  it('keep the field numbers the contract documents', () => {
    expect(fieldNumbers(StreamSessionHeaderSchema)).toEqual({ experiment_id: 1, dataset_id: 2, format: 3 });
    expect(fieldNumbers(SubmitRequestSchema)).toEqual({ experiment_id: 1, dataset_id: 2, points: 3 });
    expect(fieldNumbers(PointBatchSchema)).toEqual({ points: 1 });
    expect(fieldNumbers(StreamSubmitRequestSchema)).toEqual({ header: 1, point: 2, batch: 3 });
    expect(fieldNumbers(SubmitResponseSchema)).toEqual({
      accepted: 1,
      written: 2,
      ignored: 3,
      ignored_channel_ids: 4,
    });
    expect(fieldNumbers(StreamSubmitResponseSchema)).toEqual({
      accepted: 1,
      written: 2,
      ignored: 3,
      ignored_channel_ids: 4,
      messages: 5,
      duplicates: 6,
    });
    expect(fieldNumbers(QueryResponseSchema)).toEqual({ series: 1, total_raw_points: 2 });
    expect(fieldNumbers(SeriesSchema)).toEqual({ channel_id: 1, points: 2, raw_points: 3, times_us: 4, values: 5 });
    expect(fieldNumbers(SeriesPointSchema)).toEqual({ timestamp: 1, value: 2 });
  });

  it('round-trip a mavlink-raw-v1 stream header and a batch', () => {
    const header = roundTrip(StreamSubmitRequestSchema, {
      message: {
        case: 'header',
        value: { experimentId: 'exp-1', datasetId: 'ds-1', format: 'mavlink-raw-v1' },
      },
    });
    expect(wireTags(header.bytes)).toEqual([[1, WIRE.len]]);
    expect(header.decoded.message.case).toBe('header');

    const batch = roundTrip(StreamSubmitRequestSchema, {
      message: {
        case: 'batch',
        value: { points: [{ type: { case: 'double', value: 1 } }, { type: { case: 'double', value: 2 } }] },
      },
    });
    expect(wireTags(batch.bytes)).toEqual([[3, WIRE.len]]);
    expect(batch.decoded.message.case === 'batch' && batch.decoded.message.value.points.length).toBe(2);
  });

  it('round-trip a query response', () => {
    const { decoded } = roundTrip(QueryResponseSchema, {
      series: [
        {
          channelId: '0',
          rawPoints: 10n,
          points: [{ timestamp: timestampFromDate(new Date(0)), value: -1.25 }],
        },
      ],
      totalRawPoints: 10n,
    });
    expect(decoded.series[0]?.points[0]?.value).toBe(-1.25);

    // As columns: each array packed under one tag (8 bytes a double), times exact in µs.
    const columns = roundTrip(SeriesSchema, { channelId: '0', rawPoints: 3n, timesUs: [1_796_428_800_000_001, 1_796_428_800_000_051], values: [-1.25, Number.NEGATIVE_INFINITY] });
    expect(wireTags(columns.bytes)).toEqual([
      [1, WIRE.len],
      [3, WIRE.varint],
      [4, WIRE.len],
      [5, WIRE.len],
    ]);
    expect(columns.decoded.timesUs).toEqual([1_796_428_800_000_001, 1_796_428_800_000_051]);
    expect(columns.decoded.values).toEqual([-1.25, Number.NEGATIVE_INFINITY]);
  });
});

describe('TelemetryService', () => {
  it('has the four rpcs with the right shapes in the generated descriptor', () => {
    expect(TelemetryService.typeName).toBe('sortie.telemetry.v1.TelemetryService');
    expect(TelemetryService.methods.map((m) => [m.name, m.methodKind, m.input.typeName, m.output.typeName])).toEqual([
      ['Submit', 'unary', 'sortie.telemetry.v1.SubmitRequest', 'sortie.telemetry.v1.SubmitResponse'],
      [
        'StreamSubmit',
        'client_streaming',
        'sortie.telemetry.v1.StreamSubmitRequest',
        'sortie.telemetry.v1.StreamSubmitResponse',
      ],
      ['Query', 'unary', 'sortie.telemetry.v1.QueryRequest', 'sortie.telemetry.v1.QueryResponse'],
      ['Follow', 'server_streaming', 'sortie.telemetry.v1.FollowRequest', 'sortie.telemetry.v1.FollowUpdate'],
    ]);
  });

  it('loads from the .proto at run time with @grpc/proto-loader', () => {
    // proto-loader (protobufjs) bundles google/protobuf/{timestamp,empty,struct}.proto and resolves them before
    // consulting includeDirs, so only our own source root is needed here.
    const protoRoot = resolve(import.meta.dirname, '..', '..', 'proto');
    const definition = loadSync('sortie/telemetry/v1/telemetry.proto', { includeDirs: [protoRoot] });
    const service = definition['sortie.telemetry.v1.TelemetryService'] as Record<
      string,
      { path: string; requestStream: boolean; responseStream: boolean }
    >;
    expect(service).toBeDefined();
    const shapes = Object.fromEntries(
      Object.entries(service).map(([name, m]) => [name, [m.path, m.requestStream, m.responseStream]]),
    );
    expect(shapes).toEqual({
      Submit: ['/sortie.telemetry.v1.TelemetryService/Submit', false, false],
      StreamSubmit: ['/sortie.telemetry.v1.TelemetryService/StreamSubmit', true, false],
      Query: ['/sortie.telemetry.v1.TelemetryService/Query', false, false],
      Follow: ['/sortie.telemetry.v1.TelemetryService/Follow', false, true],
    });
    // The well-known types came through as well.
    expect(definition['google.protobuf.Timestamp']).toBeDefined();
    expect(definition['google.protobuf.Empty']).toBeDefined();
    expect(definition['google.protobuf.Struct']).toBeDefined();
  });
});
