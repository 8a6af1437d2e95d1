// Signal names of flights imported from a vehicle's own log (docs/decisions/0014-onboard-logs.md):
//   ulog.<topic>.<field>                  PX4 ULog topic, instance 0
//   ulog.<topic>[<n>].<field>             PX4 ULog multi-instance topic, instance n ≥ 1
//   dataflash.<MESSAGE>.<field>           ArduPilot DataFlash message (instance 0 or none)
//   dataflash.<MESSAGE>[<n>].<field>      DataFlash message with an instance field, instance n ≥ 1
// <field> is the logged field flattened as pyulog names it: `roll`, `q[0]`, `esc[2].esc_rpm`. As with
// MAVLink signals, one spelling per signal: the instance is a canonical decimal and `[0]` is never written.

export const LOG_NAMESPACES = ['ulog', 'dataflash'] as const;
export type LogNamespace = (typeof LOG_NAMESPACES)[number];

export interface ParsedLogSignalName {
  namespace: LogNamespace;
  /** Topic or message name. */
  message: string;
  instance: number;
  /** The flattened field. */
  field: string;
}

const MAX_NAME_LENGTH = 200;
const CANONICAL_POSITIVE = '[1-9][0-9]{0,5}';
const TYPE_RE = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
// Identifiers joined by dots, each with optional canonical indexes: `q[0]`, `esc[2].esc_rpm`.
const FIELD_PART = '[A-Za-z_][A-Za-z0-9_]*(?:\\[(?:0|[1-9][0-9]{0,5})\\])*';
const FIELD_RE = new RegExp(`^${FIELD_PART}(?:\\.${FIELD_PART})*$`);
const SIGNAL_RE = new RegExp(`^(ulog|dataflash)\\.([A-Za-z_][A-Za-z0-9_]{0,63})(?:\\[(${CANONICAL_POSITIVE})\\])?\\.(.+)$`);

/** `ulog.vehicle_attitude.q[0]`, `dataflash.IMU[1].GyrX`. Throws on parts that would not parse back. */
export function logSignalName(namespace: LogNamespace, message: string, instance: number, field: string): string {
  if (!TYPE_RE.test(message)) throw new RangeError(`not a log message name usable in a signal: ${JSON.stringify(message)}`);
  if (!FIELD_RE.test(field)) throw new RangeError(`not a log field name usable in a signal: ${JSON.stringify(field)}`);
  if (!Number.isInteger(instance) || instance < 0 || instance > 999_999) throw new RangeError(`log instance must be an integer from 0 to 999999: ${instance}`);
  const name = `${namespace}.${message}${instance === 0 ? '' : `[${instance}]`}.${field}`;
  if (name.length > MAX_NAME_LENGTH) throw new RangeError(`log signal name longer than ${MAX_NAME_LENGTH} characters: ${name}`);
  return name;
}

/** The parts of a log signal name, or null for anything logSignalName would not produce. */
export function parseLogSignalName(name: string): ParsedLogSignalName | null {
  if (typeof name !== 'string' || name.length > MAX_NAME_LENGTH) return null;
  const m = SIGNAL_RE.exec(name);
  if (!m || !FIELD_RE.test(m[4]!)) return null;
  return { namespace: m[1] as LogNamespace, message: m[2]!, instance: m[3] === undefined ? 0 : Number(m[3]), field: m[4]! };
}

export function isLogSignalName(name: unknown): name is string {
  return typeof name === 'string' && parseLogSignalName(name) !== null;
}
