import { autopilotName, isAutopilotHeartbeat, modeSpans } from '@sortie/contracts';
import type { CommandSpec } from '../core/context.ts';
import { locateDataset, stringValue } from '../core/context.ts';
import { CliError } from '../core/exit-codes.ts';
import { json, table } from '../core/output.ts';
import { formatTime, parseTime } from '../core/time.ts';

const FIELDS = ['type', 'autopilot', 'base_mode', 'custom_mode'] as const;
/** Query's most points per channel: every HEARTBEAT of a long flight, not a downsampled few. */
const MAX_HEARTBEATS = 100_000;

/**
 * A MAVLink flight's modes: when each run of one mode and armed state began and ended, from the vehicle's
 * autopilot HEARTBEATs alone and named as the console's mode band and an MCAP export's MODE events name
 * them (the contracts' mavlink/modes.ts).
 */
export const MODES: CommandSpec = {
  words: ['modes'],
  usage: '<datasetId>',
  summary: "a MAVLink flight's modes and armed state over time, as its autopilot reported them (--start/--end RFC 3339)",
  options: { start: { type: 'string' }, end: { type: 'string' } },
  required: 1,
  async run(ctx) {
    const datasetId = ctx.args[0]!;
    const start = stringValue(ctx.values, 'start');
    const end = stringValue(ctx.values, 'end');
    const { experiment, dataset } = await locateDataset(ctx, datasetId);
    if (dataset.storageShape !== 'narrow') throw new CliError(`dataset ${datasetId} is not a MAVLink flight: it has no HEARTBEAT to read modes from`);
    const channels = await ctx.client.channels.list({ datasetId, experimentId: experiment.id });
    const signals = FIELDS.map((f) => `mavlink.HEARTBEAT.${f}`);
    if (!signals.every((s) => channels.some((c) => c.hypertableColName === s))) throw new CliError(`dataset ${datasetId} holds no HEARTBEAT`);
    const answer = await ctx.client.telemetry.query({
      experimentId: experiment.id,
      datasetId,
      channelIds: signals,
      maxPointsPerChannel: MAX_HEARTBEATS,
      ...(start !== undefined && { from: parseTime(start, 'start') }),
      ...(end !== undefined && { to: parseTime(end, 'end') }),
    });
    const [type, autopilot, baseMode, customMode] = answer.series.map((s) => s.points);
    // The four are fields of the same rows, returned in the same order: read as one HEARTBEAT per index.
    const n = type!.length;
    if (answer.series.some((s) => s.points.length !== n || Number(s.rawPoints) !== n)) {
      throw new CliError(`more than ${MAX_HEARTBEATS} HEARTBEATs in the window: narrow it with --start and --end`);
    }
    const times = Array.from({ length: n }, (_, i) => i);
    const values = (points: typeof type) => points!.map((p) => p.value);
    const spans = modeSpans({ times, type: values(type), autopilot: values(autopilot), baseMode: values(baseMode), customMode: values(customMode) }, n - 1);
    const at = (i: number) => formatTime(type![i]!.timestamp);
    const first = type!.findIndex((p, i) => isAutopilotHeartbeat(p.value, autopilot![i]!.value));
    const vehicle = first < 0 ? undefined : autopilotName(type![first]!.value, autopilot![first]!.value);
    if (ctx.json) {
      ctx.out(json({ datasetId, vehicle: vehicle ?? null, modes: spans.map((s) => ({ from: at(s.from), to: at(s.to), mode: s.mode, armed: s.armed })) }));
      return;
    }
    if (spans.length === 0) {
      ctx.note(`no HEARTBEAT of the vehicle's autopilot in ${n} HEARTBEATs (companions, gimbals and ground stations are not the vehicle)\n`);
      return;
    }
    ctx.out(table(['FROM', 'TO', 'MODE', 'ARMED'], spans.map((s) => [at(s.from), at(s.to), s.mode, s.armed ? 'armed' : 'disarmed'])));
    ctx.note(`${vehicle}: ${spans.length} mode span${spans.length === 1 ? '' : 's'} from ${n} HEARTBEATs\n`);
  },
};
