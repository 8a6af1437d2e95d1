import type { FollowAnswer, FollowEventAnswer } from '@sortie/client';
import type { CommandSpec } from '../core/context.ts';
import { findChannel, integerValue, listValue, locateDataset, NOT_PLOTTABLE, queryAddress } from '../core/context.ts';
import { CliError } from '../core/exit-codes.ts';
import { formatTime } from '../core/time.ts';

/** Without --channel, a dataset with at most this many numeric channels is followed whole. */
const DEFAULT_CHANNELS = 16;

/** The TIME column: RFC 3339 UTC to the microsecond, as `sortie query` prints it. */
const TIME_WIDTH = 27;

/** A LIMIT event as a line a test conductor reads at a glance. */
function limitLine(event: FollowEventAnswer): string {
  const d = (event.data ?? {}) as Record<string, unknown>;
  const state = d['active'] === false ? `ended ${typeof d['end'] === 'string' ? d['end'] : ''}`.trim() : 'CROSSED';
  const worst = typeof d['worstValue'] === 'number' ? `, worst ${d['worstValue']}` : '';
  return `LIMIT ${String(d['severity'] ?? '').toUpperCase()} ${state}: ${event.message}${worst}`;
}

/**
 * Follow a dataset live: the latest value of each chosen channel as it changes, LIMIT crossings as
 * they start and end, link events, and command status changes, one line each, until Ctrl-C or --for.
 * --json prints one JSON object per line (NDJSON) per update, for scripts.
 */
export const FOLLOW: CommandSpec = {
  words: ['follow'],
  usage: '<datasetId>',
  summary: 'follow a dataset live: latest values of --channel NAME… as they change, limit crossings, link and command events (--window SECONDS, --for SECONDS; Ctrl-C stops)',
  options: {
    channel: { type: 'string', multiple: true },
    window: { type: 'string' },
    for: { type: 'string' },
  },
  required: 1,
  async run(ctx) {
    const datasetId = ctx.args[0]!;
    const windowS = integerValue(ctx.values, 'window', { min: 1, max: 86_400 }) ?? 60;
    const forS = integerValue(ctx.values, 'for', { min: 1, max: 1_000_000 });
    const { experiment } = await locateDataset(ctx, datasetId);
    const channels = await ctx.client.channels.list({ datasetId, experimentId: experiment.id });
    const wanted = listValue(ctx.values, 'channel');
    const numeric = channels.filter((c) => !NOT_PLOTTABLE.has(c.dataType));
    if (wanted.length === 0 && numeric.length > DEFAULT_CHANNELS) {
      throw new CliError(`the dataset has ${numeric.length} numeric channels: choose some with --channel (sortie channels ${datasetId} lists them)`);
    }
    const chosen = wanted.length === 0
      ? numeric
      : wanted.map((name) => {
          const channel = findChannel(channels, name);
          // A MAVLink signal no frame has carried yet can still be followed: it may arrive in this flight.
          if (!channel && name.startsWith('mavlink.')) return { name, hypertableColName: name };
          if (!channel) throw new CliError(`--channel ${name}: the dataset has no such channel (sortie channels ${datasetId} lists them)`);
          return channel;
        });

    const stop = new AbortController();
    const onSignal = () => stop.abort();
    process.once('SIGINT', onSignal);
    const timer = forS === undefined ? undefined : setTimeout(() => stop.abort(), forS * 1000);
    const latest = new Map<string, number>();
    let header = false;
    const line = (time: string, what: string, text: string | number) => {
      if (!header && !ctx.json) {
        ctx.out(`${'TIME'.padEnd(TIME_WIDTH)}  ${'WHAT'.padEnd(24)}  VALUE\n`);
        header = true;
      }
      ctx.out(`${(formatTime(time) || '-').padEnd(TIME_WIDTH)}  ${what.padEnd(24)}  ${text}\n`);
    };
    try {
      const stream = ctx.client.telemetry.follow(
        { experimentId: experiment.id, datasetId, channelIds: chosen.map(queryAddress), windowMs: windowS * 1000 },
        { signal: stop.signal },
      );
      ctx.note(`following ${chosen.length} channel${chosen.length === 1 ? '' : 's'} of ${datasetId}${forS ? ` for ${forS} s` : ''} (Ctrl-C stops)\n`);
      for await (const update of stream) {
        if (ctx.json) ctx.out(JSON.stringify(updateJson(update, chosen.map((c) => c.name))) + '\n');
        else printUpdate(update);
      }
    } finally {
      clearTimeout(timer);
      process.off('SIGINT', onSignal);
    }

    function printUpdate(update: FollowAnswer): void {
      update.series.forEach((series, i) => {
        const last = series.points.at(-1);
        if (!last) return;
        const name = chosen[i]!.name;
        if (latest.get(name) === last.value && !update.reset) return;
        latest.set(name, last.value);
        line(last.timestamp, name, last.value);
      });
      for (const event of update.events) {
        // Opening the stream: crossings still active, not the flight's whole history.
        if (update.reset && !(event.kind === 'LIMIT' && event.data['active'] === true)) continue;
        line(event.time, event.kind, event.kind === 'LIMIT' ? limitLine(event) : event.message || '-');
      }
      if (!update.reset) {
        for (const command of update.commands as Array<Record<string, unknown>>) {
          line(new Date().toISOString(), 'COMMAND', `${String(command['commandText'])}: ${String(command['status'])}${command['statusDetail'] ? ` (${String(command['statusDetail'])})` : ''}`);
        }
      }
    }
  },
};

/** One update for scripts: the newest sample per channel, events and commands as the stream sent them. */
function updateJson(update: FollowAnswer, names: string[]) {
  return {
    reset: update.reset,
    head: update.head,
    latest: Object.fromEntries(
      update.series.flatMap((s, i) => {
        const last = s.points.at(-1);
        return last ? [[names[i]!, { time: last.timestamp, value: last.value, samples: s.points.length, rawPoints: s.rawPoints }]] : [];
      }),
    ),
    events: update.events.map((e) => ({ id: e.id, time: e.time || null, kind: e.kind, message: e.message, data: e.data })),
    commands: update.commands,
    dropped: update.dropped,
  };
}
