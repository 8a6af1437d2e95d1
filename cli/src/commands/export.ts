import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { McapStreamReader } from '@mcap/core';
import type { CommandSpec, Context } from '../core/context.ts';
import { listValue, locateDataset, stringValue } from '../core/context.ts';
import { CliError } from '../core/exit-codes.ts';
import { json } from '../core/output.ts';
import { ProgressBar, type ProgressSpan } from '../core/progress.ts';
import { formatBytes } from '../core/progress.ts';
import { timeMicros } from '../core/time.ts';

/** The file name the server proposes (Content-Disposition), reduced to a plain name in this folder. */
export function fileNameOf(disposition: string | null, fallback: string): string {
  const match = /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(disposition ?? '');
  const name = match ? decodeURIComponent(match[1]!).split(/[\\/]/).pop()! : '';
  return /^[^.][\w.\- ]*$/.test(name) ? name : fallback;
}

/**
 * The time span the export covers, for the bar's fraction: the dataset's first and last sample over all its
 * channels (GET /api/datasets/span; one channel's would miss the others', a MAVLink flight's messages run on
 * different clocks), cut to the window when one is given. Unknown (no ETA) when there is nothing to ask.
 */
async function spanOf(ctx: Context, experimentId: string, datasetId: string, start?: string, end?: string): Promise<ProgressSpan | undefined> {
  try {
    const span = await ctx.client.datasets.span({ datasetId, experimentId });
    // A window's bounds to the millisecond: enough for a progress bar.
    const startUs = Math.max(timeMicros(span.first), start === undefined ? -Infinity : Date.parse(start) * 1000);
    const endUs = Math.min(timeMicros(span.last), end === undefined ? Infinity : Date.parse(end) * 1000);
    return Number.isFinite(startUs) && Number.isFinite(endUs) ? { startUs, endUs } : undefined;
  } catch {
    return undefined;
  }
}

/** Follows the bytes going by to know how many rows (messages) were written and the last one's time. */
function tracker(format: 'csv' | 'mcap') {
  let rows = 0;
  let atUs: number | undefined;
  if (format === 'csv') {
    let tail = '';
    let header = true;
    const decoder = new TextDecoder();
    return {
      unit: 'rows',
      see(chunk: Uint8Array) {
        const text = tail + decoder.decode(chunk, { stream: true });
        const lines = text.split('\n');
        tail = lines.pop()!;
        for (const line of lines) {
          if (header) {
            header = false;
            continue;
          }
          rows++;
        }
        const last = lines.at(-1);
        // time_unix_us is the second column and never quoted.
        const us = last ? Number(last.split(',')[1]) : Number.NaN;
        if (Number.isFinite(us)) atUs = us;
      },
      get rows() {
        return rows;
      },
      get atUs() {
        return atUs;
      },
    };
  }
  let reader: McapStreamReader | undefined = new McapStreamReader({ validateCrcs: false });
  return {
    unit: 'messages',
    see(chunk: Uint8Array) {
      if (!reader) return;
      try {
        reader.append(chunk);
        for (let record; (record = reader.nextRecord()); ) {
          if (record.type === 'Message') {
            rows++;
            atUs = Number(record.logTime / 1000n);
          }
        }
      } catch {
        // A layout this reader cannot follow (a compression it lacks): bytes and rate only.
        reader = undefined;
      }
    },
    get rows() {
      return rows;
    },
    get atUs() {
      return atUs;
    },
  };
}

export const EXPORT: CommandSpec = {
  words: ['export'],
  usage: '<datasetId>',
  summary: 'download a dataset as CSV or MCAP (--format csv|mcap, --channel NAME…, --start/--end, --output FILE or - for stdout)',
  options: {
    format: { type: 'string' },
    channel: { type: 'string', multiple: true },
    start: { type: 'string' },
    end: { type: 'string' },
    output: { type: 'string', short: 'o' },
  },
  required: 1,
  async run(ctx) {
    const datasetId = ctx.args[0]!;
    const format = stringValue(ctx.values, 'format') ?? 'csv';
    if (format !== 'csv' && format !== 'mcap') throw new CliError(`--format must be csv or mcap, not "${format}"`);
    const start = stringValue(ctx.values, 'start');
    const end = stringValue(ctx.values, 'end');
    const channel = listValue(ctx.values, 'channel');
    const output = stringValue(ctx.values, 'output');
    const { experiment } = await locateDataset(ctx, datasetId);
    const response = await ctx.client.exportDataset({
      datasetId,
      experimentId: experiment.id,
      format,
      ...(channel.length > 0 && { channel }),
      ...(start !== undefined && { start }),
      ...(end !== undefined && { end }),
    });
    const toStdout = output === '-';
    const file = toStdout ? undefined : (output ?? fileNameOf(response.headers.get('content-disposition'), `${datasetId}.${format}`));
    const showProgress = ctx.io.stderr.isTTY === true;
    const span = showProgress ? await spanOf(ctx, experiment.id, datasetId, start, end) : undefined;
    const bar = showProgress ? new ProgressBar((text) => ctx.io.stderr.write(text)) : undefined;
    const seen = tracker(format);
    // Written beside the target and renamed at the end, so a broken download never looks complete.
    const partial = file === undefined ? undefined : `${file}.partial`;
    const sink = partial === undefined ? ctx.io.stdout : createWriteStream(partial);
    let bytes = 0;
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        bytes += chunk.byteLength;
        seen.see(chunk);
        if (!sink.write(chunk)) await new Promise<void>((resolve) => sink.once('drain', () => resolve()));
        bar?.update({ bytes, rows: seen.rows, unit: seen.unit, atUs: seen.atUs, span });
      }
      bar?.update({ bytes, rows: seen.rows, unit: seen.unit, atUs: span?.endUs, span }, true);
      bar?.finish();
      if (partial !== undefined) {
        await new Promise<void>((resolve, reject) => (sink as ReturnType<typeof createWriteStream>).end((error?: Error | null) => (error ? reject(error) : resolve())));
        await rename(partial, file!);
      }
    } catch (error) {
      bar?.finish();
      if (partial !== undefined) {
        (sink as ReturnType<typeof createWriteStream>).destroy();
        await rm(partial, { force: true });
      }
      throw new CliError(`the download broke off after ${formatBytes(bytes)}: ${(error as Error).message}`, 1);
    }
    if (file !== undefined) {
      ctx.out(ctx.json ? json({ file, format, bytes, [seen.unit]: seen.rows }) : `wrote ${file} (${format}, ${formatBytes(bytes)}, ${seen.rows} ${seen.unit})\n`);
    }
  },
};
