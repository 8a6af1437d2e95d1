import { McapWriter, type IWritable } from '@mcap/core';
import { MCAP_TOPICS } from '@sortie/contracts';
import type { MavlinkMessages, RawRows, RawValue, RawValueType } from '../telemetry/raw-rows.ts';

/** An event on the dataset's time axis (aligned for narrow datasets), for the `/events` channel. */
export interface ExportEvent {
  t: number;
  kind: string;
  message: string;
}

const JSON_TYPE: Record<RawValueType, Record<string, unknown>> = {
  number: { type: 'number' },
  // Exact 64-bit integers: a number where it is safe, else its decimal string (rare; the schema says integer,
  // because Foxglove's JSON Schema reader takes one type per field).
  integer: { type: 'integer' },
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

/** One channel of the file: its topic and the JSON Schema of its messages. */
export interface McapChannelSpec {
  topic: string;
  schemaName: string;
  schema: Record<string, unknown>;
}

/** A message for `channels[channel]` at `t` µs, its JSON text ready. */
export interface McapMessage {
  t: number;
  channel: number;
  json: string;
}

/** What an MCAP export writes: its channels, then pages of messages in time order. */
export interface McapSource {
  channels: McapChannelSpec[];
  pages(): AsyncGenerator<McapMessage[]>;
}

/**
 * A wide dataset's rows as one channel `/rows`: each message one row, null where it has no value. The
 * schema gives each column one type (Foxglove's JSON Schema reader takes no `anyOf` or type lists);
 * a null in a message is simply a value the plot skips.
 */
export function wideMcap(source: RawRows): McapSource {
  const properties = Object.fromEntries(source.columns.map((c) => [c.name, JSON_TYPE[c.type]]));
  return {
    channels: [{ topic: MCAP_TOPICS.rows, schemaName: 'sortie.Row', schema: { title: 'sortie.Row', type: 'object', properties } }],
    async *pages() {
      for await (const page of source.pages()) {
        yield page.map((record) => {
          const row: Record<string, unknown> = {};
          source.columns.forEach((column, i) => {
            const value = record.values[i];
            row[column.name] = value === undefined ? null : jsonValue(value, column.type);
          });
          return { t: record.t, channel: 0, json: JSON.stringify(row) };
        });
      }
    },
  };
}

/**
 * A MAVLink dataset as one channel `/mavlink/<MESSAGE>` per message type, one message per stored frame
 * (its JSON object made in SQL, narrow/frame-pages.ts), in aligned time order across channels.
 */
export function mavlinkMcap(messages: MavlinkMessages): McapSource {
  const index = new Map(messages.channels.map((c, i) => [c.msgid, i]));
  return {
    channels: messages.channels.map((c) => ({ topic: `/${c.namespace}/${c.message}`, schemaName: `${c.namespace}.${c.message}`, schema: c.schema })),
    async *pages() {
      for await (const page of messages.pages()) yield page.map((frame) => ({ t: frame.t, channel: index.get(frame.msgid)!, json: frame.json }));
    },
  };
}

/**
 * An MCAP file, a page at a time (Foxglove opens it): the source's channels with their JSON Schemas
 * (Foxglove's `jsonschema` encoding, JSON messages), log and publish time the message's time; events
 * on `/events` as foxglove.Log, in time order among the rest. Chunked (1 MiB), with the summary and
 * indexes readers seek by.
 */
export async function* mcapBytes(
  source: McapSource,
  events: readonly ExportEvent[],
  meta: { shape: 'wide' | 'narrow'; datasetId: string; datasetName: string; systemId?: number | null },
): AsyncGenerator<Uint8Array> {
  const out = new Collector();
  const writer = new McapWriter({ writable: out, useChunks: true, chunkSize: 1024 * 1024, useStatistics: true });
  const encoder = new TextEncoder();
  await writer.start({ profile: '', library: 'sortie' });
  const metadata = new Map([['datasetId', meta.datasetId], ['name', meta.datasetName], ['storageShape', meta.shape]]);
  if (meta.systemId !== undefined && meta.systemId !== null) metadata.set('mavlinkSystemId', String(meta.systemId));
  await writer.addMetadata({ name: 'sortie.dataset', metadata });

  const channels: { id: number; sequence: number }[] = [];
  for (const spec of source.channels) {
    const schemaId = await writer.registerSchema({ name: spec.schemaName, encoding: 'jsonschema', data: encoder.encode(JSON.stringify(spec.schema)) });
    channels.push({ id: await writer.registerChannel({ topic: spec.topic, schemaId, messageEncoding: 'json', metadata: new Map() }), sequence: 0 });
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
    for (const message of page) {
      await writeEventsUntil(message.t);
      const channel = channels[message.channel]!;
      const time = nanos(message.t);
      await writer.addMessage({ channelId: channel.id, sequence: channel.sequence++, logTime: time, publishTime: time, data: encoder.encode(message.json) });
    }
    const bytes = out.take();
    if (bytes) yield bytes;
  }
  await writeEventsUntil(Infinity);
  await writer.end();
  const rest = out.take();
  if (rest) yield rest;
}
