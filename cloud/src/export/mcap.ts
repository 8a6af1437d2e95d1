import { McapWriter, type IWritable } from '@mcap/core';
import { MCAP_TOPICS } from '@sortie/contracts';
import type { RawColumn, RawRows, RawValue, RawValueType } from '../telemetry/raw-rows.ts';

/** An event on the dataset's time axis (aligned for narrow datasets), for the `/events` channel. */
export interface ExportEvent {
  t: number;
  kind: string;
  message: string;
}

const JSON_TYPE: Record<RawValueType, Record<string, unknown>> = {
  number: { type: 'number' },
  // Exact 64-bit integers: a number where it is safe, else its decimal string.
  integer: { type: ['integer', 'string'] },
  boolean: { type: 'boolean' },
  string: { type: 'string' },
  bytes: { type: 'string', contentEncoding: 'base64' },
};

/** foxglove.Log as JSON Schema (Foxglove's schema for log messages; level 2 is INFO). */
const FOXGLOVE_LOG_SCHEMA = {
  title: 'foxglove.Log',
  type: 'object',
  properties: {
    timestamp: { type: 'object', properties: { sec: { type: 'integer', minimum: 0 }, nsec: { type: 'integer', minimum: 0 } } },
    level: { type: 'integer', enum: [0, 1, 2, 3, 4, 5] },
    message: { type: 'string' },
    name: { type: 'string' },
    file: { type: 'string' },
    line: { type: 'integer', minimum: 0 },
  },
};

function jsonValue(value: RawValue, type: RawValueType): unknown {
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64');
  if (type === 'integer' && typeof value === 'string') {
    const n = Number(value);
    return Number.isSafeInteger(n) ? n : value;
  }
  return value;
}

const nanos = (us: number): bigint => BigInt(Math.round(us)) * 1000n;

/** Collects what the writer writes, copied (the writer reuses its buffer), until the stream takes it. */
class Collector implements IWritable {
  #size = 0n;
  #chunks: Uint8Array[] = [];
  async write(buffer: Uint8Array): Promise<void> {
    this.#chunks.push(buffer.slice());
    this.#size += BigInt(buffer.byteLength);
  }
  position(): bigint {
    return this.#size;
  }
  take(): Uint8Array | undefined {
    if (this.#chunks.length === 0) return undefined;
    const out = Buffer.concat(this.#chunks);
    this.#chunks = [];
    return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
  }
}

/**
 * An MCAP file of raw rows, a page at a time (Foxglove opens it). MAVLink (narrow) datasets: one channel
 * `/mavlink/<MESSAGE>` per message type, each message the chosen fields of one frame; wide datasets: one
 * channel `/rows`, each message one row with null where it has no value. JSON messages with a JSON
 * Schema per channel; log and publish time are the sample's time. Events go to `/events` as foxglove.Log,
 * in time order among the rest. Chunked (1 MiB), with the summary and indexes readers seek by.
 */
export async function* mcapBytes(
  source: RawRows,
  events: readonly ExportEvent[],
  meta: { shape: 'wide' | 'narrow'; datasetId: string; datasetName: string },
): AsyncGenerator<Uint8Array> {
  const out = new Collector();
  const writer = new McapWriter({ writable: out, useChunks: true, chunkSize: 1024 * 1024, useStatistics: true });
  const encoder = new TextEncoder();
  await writer.start({ profile: '', library: 'sortie' });
  await writer.addMetadata({ name: 'sortie.dataset', metadata: new Map([['datasetId', meta.datasetId], ['name', meta.datasetName], ['storageShape', meta.shape]]) });

  // One channel per MAVLink message type (narrow) or one for all rows (wide); columns map to their channel.
  const groups = new Map<string, { columns: number[]; channelId: number; sequence: number }>();
  const groupOf: string[] = [];
  source.columns.forEach((column, i) => {
    const topic = meta.shape === 'narrow' ? `${MCAP_TOPICS.mavlinkPrefix}${column.message}` : MCAP_TOPICS.rows;
    groupOf[i] = topic;
    const group = groups.get(topic) ?? { columns: [], channelId: -1, sequence: 0 };
    group.columns.push(i);
    groups.set(topic, group);
  });
  const key = (column: RawColumn) => (meta.shape === 'narrow' ? column.field! : column.name);
  for (const [topic, group] of groups) {
    const properties = Object.fromEntries(
      group.columns.map((i) => {
        const column = source.columns[i]!;
        return [key(column), meta.shape === 'wide' ? { anyOf: [JSON_TYPE[column.type], { type: 'null' }] } : JSON_TYPE[column.type]];
      }),
    );
    const title = meta.shape === 'narrow' ? `mavlink.${source.columns[group.columns[0]!]!.message}` : 'sortie.Row';
    const schemaId = await writer.registerSchema({
      name: title,
      encoding: 'jsonschema',
      data: encoder.encode(JSON.stringify({ title, type: 'object', properties })),
    });
    group.channelId = await writer.registerChannel({ topic, schemaId, messageEncoding: 'json', metadata: new Map() });
  }
  const logSchema = await writer.registerSchema({ name: 'foxglove.Log', encoding: 'jsonschema', data: encoder.encode(JSON.stringify(FOXGLOVE_LOG_SCHEMA)) });
  const eventChannel = await writer.registerChannel({ topic: MCAP_TOPICS.events, schemaId: logSchema, messageEncoding: 'json', metadata: new Map() });
  let eventSequence = 0;
  let nextEvent = 0;
  const writeEventsUntil = async (t: number) => {
    while (nextEvent < events.length && events[nextEvent]!.t <= t) {
      const event = events[nextEvent++]!;
      const sec = Math.floor(event.t / 1_000_000);
      const body = {
        timestamp: { sec, nsec: Math.round(event.t - sec * 1_000_000) * 1000 },
        level: 2,
        message: event.message ? `${event.kind}: ${event.message}` : event.kind,
        name: event.kind,
        file: '',
        line: 0,
      };
      await writer.addMessage({ channelId: eventChannel, sequence: eventSequence++, logTime: nanos(event.t), publishTime: nanos(event.t), data: encoder.encode(JSON.stringify(body)) });
    }
  };

  for await (const page of source.pages()) {
    for (const record of page) {
      await writeEventsUntil(record.t);
      // A wide row is one message; a narrow record holds one message type's fields at one instant (a frame's).
      const first = record.values.findIndex((v) => v !== undefined);
      if (first < 0) continue;
      const group = groups.get(groupOf[first]!)!;
      const message: Record<string, unknown> = {};
      for (const i of group.columns) {
        const value = record.values[i];
        const column = source.columns[i]!;
        if (value !== undefined) message[key(column)] = jsonValue(value, column.type);
        else if (meta.shape === 'wide') message[key(column)] = null;
      }
      const time = nanos(record.t);
      await writer.addMessage({ channelId: group.channelId, sequence: group.sequence++, logTime: time, publishTime: time, data: encoder.encode(JSON.stringify(message)) });
    }
    const bytes = out.take();
    if (bytes) yield bytes;
  }
  await writeEventsUntil(Infinity);
  await writer.end();
  const rest = out.take();
  if (rest) yield rest;
}
