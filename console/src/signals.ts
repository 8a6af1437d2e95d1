import { parseLogSignalName, type Channel } from '@sortie/contracts';

export interface ChannelGroup {
  /**
   * The MAVLink message (`ATTITUDE`), a log's topic or message with its instance (`vehicle_attitude`,
   * `actuator_outputs[1]`, `IMU[1]`), or '' for a wide dataset's plain channels.
   */
  message: string;
  channels: Channel[];
}

const SIGNAL = /^mavlink\.([A-Z][A-Z0-9_]*)\./;

/** The message a signal belongs to (see ChannelGroup), or '' for a plain channel. */
function messageOf(name: string): string {
  const mavlink = SIGNAL.exec(name);
  if (mavlink) return mavlink[1]!;
  const log = parseLogSignalName(name);
  return log ? `${log.message}${log.instance === 0 ? '' : `[${log.instance}]`}` : '';
}

/** A signal's name within its group: `roll` of `mavlink.ATTITUDE.roll`, `q[0]` of `ulog.vehicle_attitude.q[0]`. */
export function fieldOf(name: string): string {
  const mavlink = SIGNAL.exec(name);
  if (mavlink) return name.slice(mavlink[0].length);
  return parseLogSignalName(name)?.field ?? name;
}

/**
 * A flight has hundreds of signals: grouped by message (MAVLink message, log topic or message), in message
 * order, keeping only those whose name, unit or type contains every word of the filter (case-insensitive).
 */
export function groupChannels(channels: readonly Channel[], filter: string): ChannelGroup[] {
  const words = filter.toLowerCase().split(/\s+/).filter(Boolean);
  const groups = new Map<string, Channel[]>();
  for (const channel of channels) {
    const haystack = `${channel.name} ${channel.unit} ${channel.dataType}`.toLowerCase();
    if (!words.every((w) => haystack.includes(w))) continue;
    const message = messageOf(channel.name);
    let list = groups.get(message);
    if (!list) groups.set(message, (list = []));
    list.push(channel);
  }
  return [...groups.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([message, list]) => ({ message, channels: list.sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0)) }));
}

/** `flight-7-sys1` → 1: the agent names a MAVLink dataset after its sortie and system id. */
export function systemIdOf(datasetName: string): number | undefined {
  const match = /-sys(\d+)$/.exec(datasetName);
  return match ? Number(match[1]) : undefined;
}

// Query reads numbers (and booleans as 0/1); these labels hold text, bytes, flag sets or nothing.
const NOT_PLOTTABLE = new Set(['string', 'bytes', 'bit_field', 'empty']);

/** Whether Query can read the channel (a text or bytes channel is listed, exported, but not plotted). */
export function plottable(channel: Channel): boolean {
  return !NOT_PLOTTABLE.has(channel.dataType);
}

/**
 * The channel's address in a Query: a wide channel by the N of its `ch_N` column (Query's channel_ids
 * are indexes there), a MAVLink signal by its name.
 */
export function queryChannelId(channel: Channel): string {
  return /^ch_(\d+)$/.exec(channel.hypertableColName)?.[1] ?? channel.hypertableColName;
}
