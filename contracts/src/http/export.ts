import { z } from 'zod';
import { Timestamp, Uuid, text } from './common.ts';

/** The file formats of GET /api/datasets/export. */
export const EXPORT_FORMATS = ['csv', 'mcap'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** The Content-Type each format is answered with (MCAP has no registered type; Foxglove's tools use this one). */
export const EXPORT_MEDIA_TYPES: Record<ExportFormat, string> = {
  csv: 'text/csv; charset=utf-8',
  mcap: 'application/x-mcap',
};

/**
 * More channels than this in one export is refused: a wide dataset has at most 1,600 columns, and a
 * MAVLink dialect a few thousand signals, so the bound only stops a query string built to be huge.
 */
export const EXPORT_MAX_CHANNELS = 2000;

/**
 * GET /api/datasets/export (datasets:read): a dataset's raw rows as a streamed file, never downsampled.
 * `channel` is repeatable (`?channel=a&channel=b`); none exports every channel. A wide dataset's channel
 * is its name or `ch_N`, a MAVLink (narrow) dataset's its signal name (`mavlink.ATTITUDE.roll`, any kind:
 * numbers, text, `mavlink.UNKNOWN_<id>.raw`); in a MAVLink MCAP the named signals choose the message types
 * and their fields. `start` is inclusive and `end` exclusive, as in Query; narrow datasets are cut on
 * their aligned time axis.
 */
export const ExportQuerySchema = z.object({
  datasetId: Uuid,
  experimentId: Uuid.optional(),
  format: z.enum(EXPORT_FORMATS, { error: 'must be csv or mcap' }),
  // One value arrives as a string, a repeated parameter as a list; both read as a list.
  channel: z
    .union([text().min(1), z.array(text().min(1)).max(EXPORT_MAX_CHANNELS, `at most ${EXPORT_MAX_CHANNELS} channels`)])
    .optional()
    .transform((value) => (value === undefined ? [] : Array.isArray(value) ? value : [value]))
    .refine((list) => new Set(list).size === list.length, { error: 'names a channel more than once' }),
  start: Timestamp.optional(),
  end: Timestamp.optional(),
});
export type ExportQueryInput = z.input<typeof ExportQuerySchema>;
export type ExportQuery = z.output<typeof ExportQuerySchema>;

/** The CSV's first two columns; channel columns follow, named as the channels are. */
export const EXPORT_CSV_TIME_COLUMNS = ['time', 'time_unix_us'] as const;

/**
 * The MCAP file's layout, so readers (and Foxglove layouts) can name channels without guessing.
 * MAVLink datasets: one channel per message type, topic `/mavlink/<MESSAGE>` (`UNKNOWN_<id>` for an id
 * outside the dialect; the dataset is one system id, in the `sortie.dataset` metadata as
 * `mavlinkSystemId`), one message per stored frame: a JSON object of every field the frame carried, named
 * as in the dialect XML (numeric arrays as arrays, char fields as strings, `raw` as base64; NaN and
 * infinities as null; a v1 frame's extension fields absent). Wide datasets: one channel `/rows`, each
 * message one row (`{ "<channel name>": value, … }`, null where no value was written). Events: `/events`,
 * schema `foxglove.Log`. Every message's log time is its sample time (aligned, for MAVLink) in ns since
 * 1970, and messages come in log-time order across channels.
 */
export const MCAP_TOPICS = {
  mavlinkPrefix: '/mavlink/',
  rows: '/rows',
  events: '/events',
} as const;
