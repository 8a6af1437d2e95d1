import type { SignalColumn } from './message-tables.ts';
import { MAVLINK_FIELD_DATA_TYPE, MAVLINK_REGISTRY, type MessageClass, parseSignalName } from '@sortie/contracts/mavlink';

/** What a signal holds: numbers (Query reads them as doubles), text, or raw bytes. */
export type ValueKind = 'double' | 'text' | 'bytes';

export interface SignalInfo {
  /** The channel's dataType label, named like the TelemetryPoint value members. */
  dataType: 'double' | 'float' | 'int32' | 'uint32' | 'int64' | 'uint64' | 'string' | 'bytes';
  /** Unit from the dialect XML ('' when it names none). */
  unit: string;
  kind: ValueKind;
}

const BY_NAME: ReadonlyMap<string, MessageClass> = new Map([...MAVLINK_REGISTRY.values()].map((clazz) => [clazz.MSG_NAME, clazz]));

const RAW: SignalInfo = { dataType: 'bytes', unit: '', kind: 'bytes' };

/**
 * What the pinned dialect says about a signal: its field's type and unit. The decoder stores exactly
 * these kinds (numbers as doubles, char fields as text, undecodable payloads as bytes), so the label
 * matches the stored value kind. Undefined for a name the dialect cannot have produced.
 */
export function signalInfo(signal: string): SignalInfo | undefined {
  const parsed = parseSignalName(signal);
  if (!parsed) return undefined;
  if (parsed.unknown !== undefined) return RAW;
  const field = BY_NAME.get(parsed.message)?.FIELDS.find((f) => f.source === parsed.field);
  if (!field) return undefined;
  const isArray = field.type.endsWith('[]');
  const base = isArray ? field.type.slice(0, -2) : field.type;
  const dataType = MAVLINK_FIELD_DATA_TYPE[base];
  if (!dataType) return undefined;
  // A char array is one text value; a numeric array is addressed element by element.
  if (base === 'char') return parsed.index === undefined ? { dataType, unit: field.units ?? '', kind: 'text' } : undefined;
  if (isArray !== (parsed.index !== undefined) || (parsed.index !== undefined && parsed.index >= field.length)) return undefined;
  return { dataType, unit: field.units ?? '', kind: 'double' };
}

const LOG_DATA_TYPE: Record<SignalColumn['type'], SignalInfo['dataType']> = {
  int2: 'int32',
  int4: 'int32',
  int8: 'int64',
  uint64: 'uint64',
  float4: 'float',
  float8: 'double',
  text: 'string',
  bytea: 'bytes',
};

/** What an imported log's column holds: its stored type and the unit the log gave (none for ULog). */
export function logSignalInfo(column: SignalColumn): SignalInfo {
  const kind: ValueKind = column.type === 'text' ? 'text' : column.type === 'bytea' ? 'bytes' : 'double';
  return { dataType: LOG_DATA_TYPE[column.type], unit: column.unit ?? '', kind };
}
