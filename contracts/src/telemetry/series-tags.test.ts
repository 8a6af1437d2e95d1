import { ScalarType, type DescField, type DescMessage } from '@bufbuild/protobuf';
import { TimestampSchema } from '@bufbuild/protobuf/wkt';
import { describe, expect, it } from 'vitest';
import { SeriesPointSchema, SeriesSchema } from '../gen/index.ts';
import { SERIES_TAGS } from './series-tags.ts';

/** The tag protobuf writes for a field: its number and wire type (LEN for messages, strings and packed repeated scalars). */
function tagOf(message: DescMessage, name: string): number {
  const field = message.fields.find((f) => f.name === name) as DescField;
  const wireType =
    field.fieldKind === 'message' || field.fieldKind === 'list' || (field.fieldKind === 'scalar' && field.scalar === ScalarType.STRING)
      ? 2
      : field.fieldKind === 'scalar' && field.scalar === ScalarType.DOUBLE
        ? 1
        : 0;
  return (field.number << 3) | wireType;
}

describe('SERIES_TAGS', () => {
  it('are the tags of the generated Series, SeriesPoint and Timestamp', () => {
    expect(SERIES_TAGS).toEqual({
      channelId: tagOf(SeriesSchema, 'channel_id'),
      points: tagOf(SeriesSchema, 'points'),
      rawPoints: tagOf(SeriesSchema, 'raw_points'),
      timesUs: tagOf(SeriesSchema, 'times_us'),
      values: tagOf(SeriesSchema, 'values'),
      pointTimestamp: tagOf(SeriesPointSchema, 'timestamp'),
      pointValue: tagOf(SeriesPointSchema, 'value'),
      seconds: tagOf(TimestampSchema, 'seconds'),
      nanos: tagOf(TimestampSchema, 'nanos'),
    });
  });
});
