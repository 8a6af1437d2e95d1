import { z } from 'zod';
import { Timestamp, TimestampOut, Uuid, text } from './common.ts';

/**
 * Importing a vehicle's own log file (PX4 ULog, ArduPilot DataFlash, MAVLink telemetry logs and raw
 * captures) into a new narrow dataset of an experiment, and the parameters of flights.
 * docs/decisions/0014-onboard-logs.md has the design; docs/imports.md the user's view.
 */

/** Formats a file can be imported as. `tlog`: 8-byte big-endian µs timestamp before every MAVLink frame; `mavlink`: bare frames. */
export const IMPORT_FORMATS = ['ulog', 'dataflash', 'tlog', 'mavlink'] as const;
export const ImportFormat = z.enum(IMPORT_FORMATS);
export type ImportFormat = z.infer<typeof ImportFormat>;

export const IMPORT_NAME_MAX = 200;

/**
 * POST /api/imports/create?experimentId=…: the body is the file itself (any Content-Type; streamed to
 * disk, never held in memory). `name` is the new dataset's name (default: the file name without its
 * extension, else `<format>-<first 12 hex digits of the file's SHA-256>`). `format` overrides detection
 * from the file's first bytes. `start`: where to place a log without GPS time (its first message at
 * that instant); without it such a log ends at the moment of import.
 */
export const CreateImportQuerySchema = z.object({
  experimentId: Uuid,
  name: text().min(1).max(IMPORT_NAME_MAX).optional(),
  fileName: text().max(1000).optional(),
  format: ImportFormat.optional(),
  start: Timestamp.optional(),
});
export type CreateImportQuery = z.infer<typeof CreateImportQuerySchema>;

/**
 * How the flight was put onto UTC: the log's GPS time; the `start` given; the import's own time (the log
 * ending then); or, for a tlog without GPS time, the receive times its recorder wrote.
 */
export const IMPORT_TIME_SOURCES = ['gps', 'start', 'import', 'recorded'] as const;

export const ImportMessageCountSchema = z.object({
  /** `vehicle_attitude`, `actuator_outputs[1]`, `IMU[1]`, `ATTITUDE`. */
  type: text(),
  count: z.number().int(),
});

export const ImportReportSchema = z.object({
  /** Messages stored as rows (one per logged message; for MAVLink files, frames). */
  messages: z.number().int(),
  /** Per message type (and instance), most frequent first. */
  types: z.array(ImportMessageCountSchema),
  /** Logged strings and events put on the flight's timeline. */
  events: z.number().int(),
  /** Parameter values kept: the initial set plus changes. */
  parameters: z.number().int(),
  parameterChanges: z.number().int(),
  /** The flight's span on UTC: first and last message; null for a file with no message. */
  start: TimestampOut.nullable(),
  end: TimestampOut.nullable(),
  timeSource: z.enum(IMPORT_TIME_SOURCES),
  /** Bytes that could not be read as messages (corrupt stretches, a truncated tail), and where. */
  skippedBytes: z.number().int(),
  /** What a user should know: skipped stretches, no GPS time, frames of other systems left out, … */
  warnings: z.array(text()),
});
export type ImportReport = z.infer<typeof ImportReportSchema>;

export const LogImportSchema = z.object({
  id: Uuid,
  experimentId: Uuid,
  datasetId: Uuid,
  format: ImportFormat,
  fileName: text().nullable(),
  bytes: z.number().int(),
  /** Hex SHA-256 of the file: the same bytes imported again answer this import. */
  sha256: text(),
  status: z.enum(['importing', 'done']),
  /** The log's description of the vehicle: ULog information (sys_name, ver_hw, ver_sw, sys_uuid, …), DataFlash VER fields and firmware line. */
  metadata: z.record(z.string(), z.union([z.string(), z.number()])),
  report: ImportReportSchema.nullable(),
  createdAt: TimestampOut,
  finishedAt: TimestampOut.nullable(),
});
export type LogImport = z.infer<typeof LogImportSchema>;

/** The answer of POST /api/imports/create: 201 with the new import, 200 with the earlier one when the same file was imported before (`duplicate` true). */
export const CreateImportResponseSchema = LogImportSchema.extend({ duplicate: z.boolean() });
export type CreateImportResponse = z.infer<typeof CreateImportResponseSchema>;

/** A line of POST /api/imports/create's answer when asked for progress (`Accept: application/x-ndjson`). */
export const ImportProgressSchema = z.object({
  phase: z.enum(['upload', 'import']),
  /** Bytes of the file received (upload) or read (import). */
  bytes: z.number().int(),
  /** The file's size when known (Content-Length on upload). */
  totalBytes: z.number().int().nullable(),
  messages: z.number().int(),
});
export type ImportProgress = z.infer<typeof ImportProgressSchema>;

export const ListImportsQuerySchema = z
  .object({ experimentId: Uuid.optional(), datasetId: Uuid.optional() })
  .refine((q) => q.experimentId !== undefined || q.datasetId !== undefined, { error: 'give experimentId or datasetId', path: ['experimentId'] });

export const GetImportQuerySchema = z.object({ id: Uuid });

// --- Parameters -----------------------------------------------------------------------------------

export const ParametersQuerySchema = z.object({ datasetId: Uuid, experimentId: Uuid.optional() });

export const ParameterChangeSchema = z.object({
  /** On the dataset's aligned time axis; null when the log gave the change no time. */
  timestamp: TimestampOut.nullable(),
  value: z.number(),
});

export const FlightParameterSchema = z.object({
  name: text(),
  /** The value the flight started with: the log's header (ULog), its first PARM (DataFlash) or PARAM_VALUE (MAVLink). */
  initial: z.number(),
  /** Every later value that differed from the one before, in order. */
  changes: z.array(ParameterChangeSchema),
  /** The value at the end of the flight. */
  final: z.number(),
});
export type FlightParameter = z.infer<typeof FlightParameterSchema>;

export const FlightParametersSchema = z.object({
  datasetId: Uuid,
  /** Where they were read from: an imported log's parameters or a MAVLink flight's PARAM_VALUE messages. */
  source: z.enum(['log', 'mavlink']),
  parameters: z.array(FlightParameterSchema),
});
export type FlightParameters = z.infer<typeof FlightParametersSchema>;

/** Compares the values each flight started with (`initial`), or ended with (`final`). */
export const ParameterDiffQuerySchema = z.object({
  a: Uuid,
  b: Uuid,
  at: z.enum(['initial', 'final']).default('initial'),
});

export const ParameterDiffSchema = z.object({
  a: Uuid,
  b: Uuid,
  at: z.enum(['initial', 'final']),
  /** In b, not in a. */
  added: z.array(z.object({ name: text(), value: z.number() })),
  /** In a, not in b. */
  removed: z.array(z.object({ name: text(), value: z.number() })),
  changed: z.array(z.object({ name: text(), a: z.number(), b: z.number() })),
  /** Parameters with the same value in both. */
  unchanged: z.number().int(),
});
export type ParameterDiff = z.infer<typeof ParameterDiffSchema>;
