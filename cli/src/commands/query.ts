import type { CommandSpec } from '../core/context.ts';
import { findChannel, integerValue, listValue, locateDataset, NOT_PLOTTABLE, queryAddress, stringValue } from '../core/context.ts';
import { CliError } from '../core/exit-codes.ts';
import { csvField, json, table } from '../core/output.ts';
import { formatTime, parseTime } from '../core/time.ts';

const FORMATS = ['table', 'csv', 'json'] as const;

/** The service's bound on channels per Query (README, gRPC telemetry: limits). */
const MAX_CHANNELS_PER_QUERY = 256;

/**
 * A window of channels through Query: the server's downsampled series (at most --max-points per
 * channel, M4 so peaks survive), one row per point. Channels are named as `sortie channels` lists them
 * (name, or the address: `ch_N`, a MAVLink signal name); every numeric channel when none is given.
 */
export const QUERY: CommandSpec = {
  words: ['query'],
  usage: '<datasetId>',
  summary: 'read a window of channels (--channel NAME…, --start/--end RFC 3339, --max-points N) as a table, CSV or JSON (--format)',
  options: {
    channel: { type: 'string', multiple: true },
    start: { type: 'string' },
    end: { type: 'string' },
    'max-points': { type: 'string' },
    format: { type: 'string' },
  },
  required: 1,
  async run(ctx) {
    const datasetId = ctx.args[0]!;
    const format = ctx.json ? 'json' : (stringValue(ctx.values, 'format') ?? 'table');
    if (!(FORMATS as readonly string[]).includes(format)) throw new CliError(`--format must be table, csv or json, not "${format}"`);
    const start = stringValue(ctx.values, 'start');
    const end = stringValue(ctx.values, 'end');
    const maxPoints = integerValue(ctx.values, 'max-points', { min: 1, max: 1_000_000 });
    const { experiment } = await locateDataset(ctx, datasetId);
    const channels = await ctx.client.channels.list({ datasetId, experimentId: experiment.id });
    const wanted = listValue(ctx.values, 'channel');
    const chosen = wanted.length === 0
      ? channels.filter((c) => !NOT_PLOTTABLE.has(c.dataType))
      : wanted.map((name) => {
          const channel = findChannel(channels, name);
          if (!channel) throw new CliError(`--channel ${name}: the dataset has no such channel (sortie channels ${datasetId} lists them)`);
          return channel;
        });
    if (chosen.length === 0) throw new CliError(`dataset ${datasetId} has no numeric channel to query`);
    if (chosen.length > MAX_CHANNELS_PER_QUERY) {
      throw new CliError(`the dataset has ${chosen.length} numeric channels; a query reads at most ${MAX_CHANNELS_PER_QUERY}: name them with --channel (sortie channels ${datasetId} lists them)`);
    }
    const answer = await ctx.client.telemetry.query({
      experimentId: experiment.id,
      datasetId,
      channelIds: chosen.map(queryAddress),
      ...(start !== undefined && { from: parseTime(start, 'start') }),
      ...(end !== undefined && { to: parseTime(end, 'end') }),
      ...(maxPoints !== undefined && { maxPointsPerChannel: maxPoints }),
    });
    const rows = answer.series.flatMap((series, i) => series.points.map((p) => [chosen[i]!.name, formatTime(p.timestamp), p.value] as const));
    if (format === 'json') {
      ctx.out(
        json({
          datasetId,
          totalRawPoints: answer.totalRawPoints,
          series: answer.series.map((s, i) => ({
            channel: chosen[i]!.name,
            address: chosen[i]!.hypertableColName,
            rawPoints: s.rawPoints,
            points: s.points.map((p) => ({ time: formatTime(p.timestamp), value: p.value })),
          })),
        }),
      );
    } else if (format === 'csv') {
      ctx.out(['channel,time,value', ...rows.map((r) => r.map(csvField).join(','))].join('\n') + '\n');
    } else {
      ctx.out(table(['CHANNEL', 'TIME', 'VALUE'], rows));
      const shown = answer.series.reduce((n, s) => n + s.points.length, 0);
      ctx.note(`${shown} points shown of ${answer.totalRawPoints} raw points in the window\n`);
    }
  },
};
