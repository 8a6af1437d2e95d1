/**
 * The one-byte tags (field number << 3 | wire type) of `sortie.telemetry.v1.Series` and what it holds, for
 * the code that writes Series by hand (the cloud's Query answers) and reads them by hand (the client).
 * A test checks them against the generated descriptor (series-tags.test.ts).
 */
export const SERIES_TAGS = {
  channelId: 0x0a, // Series.channel_id = 1, LEN
  points: 0x12, // Series.points = 2, LEN
  rawPoints: 0x18, // Series.raw_points = 3, VARINT
  timesUs: 0x22, // Series.times_us = 4, LEN (packed doubles)
  values: 0x2a, // Series.values = 5, LEN (packed doubles)
  pointTimestamp: 0x0a, // SeriesPoint.timestamp = 1, LEN
  pointValue: 0x11, // SeriesPoint.value = 2, I64
  seconds: 0x08, // Timestamp.seconds = 1, VARINT
  nanos: 0x10, // Timestamp.nanos = 2, VARINT
} as const;
