import { logSignalName, type ImportReport, type LogNamespace } from '@sortie/contracts';
import { logTableLayout, type LogColumn, type NarrowRowWriter } from '../telemetry/log-import.ts';
import type { LogField, LogLevel, LogMessageType, LogParser, LogSink, LogValue, ParserOptions } from './formats/records.ts';
import { readFileInChunks } from './read-file.ts';
import { loadPx4EventCatalog, Px4EventCatalogError } from './formats/px4-events.ts';
import { ImportFindings, type ImportProgressSink } from './findings.ts';

/** Rows staged before a batch is written: about a second of a busy log, a few MB of column arrays. */
export const LOG_BATCH_ROWS = 16_384;

/**
 * Message types (each a table) one import stores at most: a PX4 log has one to two hundred topics, an
 * ArduPilot log as many message types and instances. A file that declares more is not a flight log a
 * table per type suits; the types past this are left out, with a warning.
 */
export const MAX_LOG_TYPES = 1000;
/** Fields a stored type may have: a PostgreSQL table holds 1,600 columns, six of them the clock's. */
export const MAX_LOG_FIELDS = 1500;

/** A format's reader: createULogParser, createDataFlashParser. */
export type MakeParser = (sink: LogSink, options?: ParserOptions) => LogParser;

/** Why a pre-pass stopped early: it found what it looked for. */
class Found extends Error {}

/**
 * How a log's boot clock maps to UTC: from the first GPS time the log holds (every row then carries
 * time_source gps), else from the caller's `start` (the first message at that instant) or, without
 * one, so that the last message falls at the moment of import. Found by a first pass that stops at
 * the first GPS pairing, so it costs a whole extra read only for a log without GPS time.
 */
export async function findLogClock(path: string, makeParser: MakeParser): Promise<{ gpsOffsetUs: number | undefined; firstBootUs: number | undefined; lastBootUs: number | undefined }> {
  let gpsOffsetUs: number | undefined;
  let firstBootUs: number | undefined;
  let lastBootUs: number | undefined;
  const noop = () => {};
  const sink: LogSink = {
    type: noop,
    data: (_id, bootUs) => {
      if (bootUs <= 0) return; // not set (see importLogFile)
      if (firstBootUs === undefined || bootUs < firstBootUs) firstBootUs = bootUs;
      if (lastBootUs === undefined || bootUs > lastBootUs) lastBootUs = bootUs;
    },
    text: noop,
    param: noop,
    info: noop,
    clock: (bootUs, unixUs) => {
      gpsOffsetUs = unixUs - bootUs;
      throw new Found();
    },
    skipped: noop,
  };
  // Clock only: the messages' boot times and the GPS ones, nothing else decoded (a log without GPS time is read whole here).
  const parser = makeParser(sink, { clockOnly: true });
  try {
    await readFileInChunks(path, (chunk) => parser.push(chunk));
    parser.end();
  } catch (error) {
    if (!(error instanceof Found)) throw error;
  }
  return { gpsOffsetUs, firstBootUs, lastBootUs };
}

/** Syslog severity names, as the timeline shows them. */
const SEVERITY = ['emergency', 'alert', 'critical', 'error', 'warning', 'notice', 'info', 'debug'] as const;

/**
 * Store a ULog or DataFlash file read by `parser` (formats/): each message type becomes a table of the
 * dataset (one per type and instance, columns named by logSignalName), each message one row whose
 * frame_seq is its position among the file's messages (so the same file written twice into one
 * dataset stores each message once), and the rest is gathered in `findings` (events, parameters,
 * metadata, counts, warnings) for the importer to store at the end.
 */
export async function importLogFile(options: {
  path: string;
  namespace: LogNamespace;
  makeParser: MakeParser;
  writer: NarrowRowWriter;
  /** UTC − boot µs: from GPS (`gps`), or the fallback's. */
  offsetUs: number;
  gps: boolean;
  findings: ImportFindings;
  progress?: ImportProgressSink;
}): Promise<void> {
  const { writer, findings, offsetUs, gps, namespace } = options;
  const layouts: Array<ReturnType<typeof logTableLayout>> = [];
  let frameSeq = 0;
  // A message logged with timestamp 0 has no time (PX4 publishes some before their first sample): it
  // keeps no boot time (NULL, so no boot session sees its clock jump to zero) and is placed at the time
  // of the message before it, or the log's first time.
  let lastBootUs = findings.firstBootUs ?? 0;
  let stored = 0;
  const sink: LogSink = {
    type(type: LogMessageType) {
      const label = type.instance === 0 ? type.name : `${type.name}[${type.instance}]`;
      if (stored >= MAX_LOG_TYPES || type.fields.length > MAX_LOG_FIELDS) {
        findings.warn(
          stored >= MAX_LOG_TYPES
            ? `${label} was left out: the log declares more than ${MAX_LOG_TYPES} message types`
            : `${label} was left out: it has ${type.fields.length} fields, more than a table holds (${MAX_LOG_FIELDS})`,
        );
        return;
      }
      stored++;
      layouts[type.id] = logTableLayout(type.id, label, columnsOf(namespace, type));
      findings.declareType(type.id, label);
    },
    data(typeId: number, bootUs: number, values: readonly LogValue[]) {
      const layout = layouts[typeId];
      frameSeq++;
      if (!layout) return; // a type left out (above)
      const timed = bootUs > 0;
      if (timed) lastBootUs = bootUs;
      const unixUs = lastBootUs + offsetUs;
      // With GPS time a row is on UTC itself (time_source gps); without, on its boot clock, placed by the
      // receive time the fallback gives it (alignment then shifts boot time by that offset).
      writer.batch.addLogRow(layout, frameSeq, unixUs, timed ? bootUs : NaN, gps ? unixUs : NaN, gps ? offsetUs : NaN, values);
      findings.message(typeId, unixUs);
    },
    text(bootUs: number | null, level: LogLevel, text: string, source: string, data?: Record<string, unknown>) {
      findings.event({
        timeUs: (bootUs !== null && bootUs > 0 ? bootUs : lastBootUs) + offsetUs,
        kind: 'LOG',
        message: text,
        data: { source, level, severity: SEVERITY[level] ?? 'info', ...(bootUs === null ? { untimed: true } : {}), ...data },
      });
    },
    param(bootUs: number | null, name: string, value: number) {
      findings.parameter(name, value, bootUs, bootUs === null ? null : (bootUs > 0 ? bootUs : lastBootUs) + offsetUs);
    },
    info(key: string, value: string | number) {
      findings.info(key, value);
    },
    clock() {},
    skipped(offset: number, bytes: number, reason: string) {
      findings.skipped(offset, bytes, reason);
    },
  };
  // A log is one system: its rows are bound to system id 1 as a stream's are to its vehicle's.
  writer.batch.sysid ??= 1;
  const parser = options.makeParser(sink);
  const flush = writeBehind(writer);
  await readFileInChunks(
    options.path,
    (chunk) => parser.push(chunk),
    async () => {
      options.progress?.(parser.offset, frameSeq);
      if (writer.staged >= LOG_BATCH_ROWS) await flush();
    },
  );
  parser.end();
  if (writer.staged > 0) await flush();
  await flush.settled();
  await namePx4Events(parser, findings);
  options.progress?.(parser.offset, frameSeq);
}

/**
 * PX4 events arrive as an id and argument bytes; the log carries their definitions (xz-compressed
 * JSON, which the streaming reader keeps but cannot decompress synchronously). Once the file is read,
 * each event's text becomes its message with the arguments filled in, as pyulog shows it. Definitions
 * that cannot be read leave the `event 0x<id>` texts, with a warning.
 */
async function namePx4Events(parser: LogParser, findings: ImportFindings): Promise<void> {
  const events = findings.events.filter((e) => e.data['source'] === 'ulog.event');
  const xz = (parser as { eventMetadataXz?: Uint8Array }).eventMetadataXz;
  if (events.length === 0) return;
  if (!xz) {
    findings.warn(`${events.length} PX4 events have no definitions in the log: they are shown by id`);
    return;
  }
  let catalog;
  try {
    catalog = await loadPx4EventCatalog(xz);
  } catch (error) {
    if (!(error instanceof Px4EventCatalogError)) throw error;
    findings.warn(`the log's PX4 event definitions could not be read (${error.message}): its ${events.length} events are shown by id`);
    return;
  }
  for (const event of events) {
    const data = event.data as { id: number; arguments: number[]; level: number };
    const named = catalog.render(data.id, data.arguments, data.level << 4);
    if (!named) continue;
    event.message = named.text;
    event.data['name'] = named.name;
    event.data['group'] = named.group;
  }
}

/**
 * Write a writer's staged rows behind the reading: at most two batches in flight (one writing, one
 * waiting its turn) while the next is read. A failed write fails the next call (or settled()).
 */
export function writeBehind(writer: NarrowRowWriter): (() => Promise<void>) & { settled(): Promise<void> } {
  const inflight: Promise<unknown>[] = [];
  let failure: unknown;
  const check = () => {
    if (failure !== undefined) throw failure;
  };
  const flush = async () => {
    check();
    inflight.push(writer.flush().catch((error: unknown) => (failure ??= error)));
    if (inflight.length >= 2) await inflight.shift();
    check();
  };
  return Object.assign(flush, {
    async settled() {
      await Promise.all(inflight.splice(0));
      check();
    },
  });
}

/** A type's columns: one per field, named `<namespace>.<type>[<n>].<field>`; a name that cannot be spelled gets a safe one, and repeats a suffix. */
function columnsOf(namespace: LogNamespace, type: LogMessageType): LogColumn[] {
  const seen = new Set<string>();
  const message = safeIdentifier(type.name);
  return type.fields.map((field: LogField) => {
    let signal: string;
    try {
      signal = logSignalName(namespace, message, type.instance, field.name);
    } catch {
      signal = logSignalName(namespace, message, type.instance, safeIdentifier(field.name));
    }
    for (let k = 2; seen.has(signal); k++) signal = logSignalName(namespace, message, type.instance, `${safeIdentifier(field.name)}_${k}`);
    seen.add(signal);
    return { signal, type: field.type, ...(field.unit ? { unit: field.unit } : {}) };
  });
}

function safeIdentifier(name: string): string {
  const cleaned = name.replace(/[^A-Za-z0-9_]/g, '_').slice(0, 64);
  return /^[A-Za-z_]/.test(cleaned) ? cleaned : `_${cleaned}`.slice(0, 64);
}

export type { ImportReport };
