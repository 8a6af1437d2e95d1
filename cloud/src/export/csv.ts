import { EXPORT_CSV_TIME_COLUMNS } from '@sortie/contracts';
import type { RawRecord, RawRows, RawValue } from '../telemetry/raw-rows.ts';
import { csvCell, csvText, rfc3339Micros } from './format.ts';

/**
 * The CSV of raw rows, a page at a time: `time,time_unix_us,<channel names…>`, then one line per stored
 * row. A narrow (MAVLink) dataset's frames at one aligned instant share a line; a signal with two
 * samples at one instant takes a second line, so every column holds exactly the samples Query returns
 * for it, in its order. Text cells are RFC 4180 strings, bytes base64 (format.ts).
 */
export async function* csvBytes(source: RawRows): AsyncGenerator<Uint8Array> {
  const encoder = new TextEncoder();
  const width = source.columns.length;
  yield encoder.encode([...EXPORT_CSV_TIME_COLUMNS, ...source.columns.map((c) => csvText(c.name))].join(',') + '\n');
  // Lines of the instant being assembled (narrow frames at one instant may span records).
  let instant: number | undefined;
  let lines: (RawValue | undefined)[][] = [];
  const flush = (out: string[]) => {
    if (instant === undefined) return;
    const time = `${rfc3339Micros(instant)},${Math.round(instant)}`;
    for (const line of lines) {
      // A MAVLink line fills a few of hundreds of columns: format only those (forEach skips the holes).
      const cells = new Array<string>(width).fill('');
      line.forEach((v, i) => {
        if (v !== undefined) cells[i] = csvCell(v);
      });
      out.push(`${time},${cells.join(',')}\n`);
    }
    lines = [];
  };
  for await (const page of source.pages()) {
    const out: string[] = [];
    for (const record of page) {
      if (record.t !== instant) {
        flush(out);
        instant = record.t;
      }
      place(lines, record, width);
    }
    // The last instant of a page may go on in the next one (MAVLink frames are paged one by one): its
    // lines wait for the next page.
    if (out.length > 0) yield encoder.encode(out.join(''));
  }
  const rest: string[] = [];
  flush(rest);
  if (rest.length > 0) yield encoder.encode(rest.join(''));
}

/**
 * Put each of a record's values on the next line of its instant that its column has not filled: the
 * k-th sample of a signal at one instant is on the instant's k-th line, so a column's order is Query's.
 */
function place(lines: (RawValue | undefined)[][], record: RawRecord, width: number): void {
  record.values.forEach((v, i) => {
    if (v === undefined) return;
    let line = lines.find((l) => l[i] === undefined);
    if (!line) {
      line = new Array(width);
      lines.push(line);
    }
    line[i] = v;
  });
}
