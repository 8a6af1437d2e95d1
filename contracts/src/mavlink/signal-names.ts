// Signal names of narrow (MAVLink) datasets (spec: Narrow storage):
//   mavlink.<MESSAGE>.<field>        scalar field
//   mavlink.<MESSAGE>.<field>[<i>]   array element
//   mavlink.UNKNOWN_<id>.raw         payload of an undecodable message id, kept rather than dropped
// A signal name is the stored address of the data, so exactly one spelling is accepted per signal:
// indexes and message ids are canonical decimals (no sign, no leading zeros, `01` is rejected).

export const SIGNAL_NAME_PREFIX = 'mavlink.';

/** MAVLink 2 message ids are 24-bit. */
export const MAX_MAVLINK_MSGID = 0xff_ff_ff;

/**
 * A MAVLink payload is at most 255 bytes, so no array field has more than 255 elements.
 * Rejecting larger indexes catches decoder bugs before they mint nonsense signals.
 */
export const MAX_SIGNAL_INDEX = 254;

const MAX_IDENTIFIER_LENGTH = 64;

// Message names in the dialect XML are upper snake case; field names are mostly lower snake case but
// a few are mixed (POWER_STATUS.Vcc, Vservo), so fields accept either case.
const MESSAGE_RE = /^[A-Z][A-Z0-9_]*$/;
const FIELD_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;
// No dialect message starts with UNKNOWN_, so the whole prefix is reserved for undecodable ids.
const UNKNOWN_PREFIX = 'UNKNOWN_';
const UNKNOWN_MESSAGE_RE = /^UNKNOWN_(0|[1-9][0-9]*)$/;
const UNKNOWN_FIELD = 'raw';
const CANONICAL_UINT = '(0|[1-9][0-9]{0,8})';

const SIGNAL_RE = new RegExp(`^mavlink\\.([A-Z][A-Z0-9_]*)\\.([A-Za-z_][A-Za-z0-9_]*)(?:\\[${CANONICAL_UINT}\\])?$`);

export interface ParsedSignalName {
  message: string;
  field: string;
  /** Present only for an array element. */
  index?: number;
  /** Present only for `mavlink.UNKNOWN_<id>.raw`: the undecodable message id. */
  unknown?: number;
}

function isIdentifier(value: string, re: RegExp): boolean {
  return value.length <= MAX_IDENTIFIER_LENGTH && re.test(value);
}

/**
 * `mavlink.ATTITUDE.roll`, or `mavlink.GPS_RAW_INT.foo[3]` with an index. Throws on a name that would
 * not parse back, and on messages in the reserved `UNKNOWN_` namespace (use unknownSignalName for those).
 */
export function signalName(message: string, field: string, index?: number): string {
  if (!isIdentifier(message, MESSAGE_RE) || message.startsWith(UNKNOWN_PREFIX)) {
    throw new RangeError(`not a MAVLink message name usable in a signal: ${JSON.stringify(message)}`);
  }
  if (!isIdentifier(field, FIELD_RE)) {
    throw new RangeError(`not a MAVLink field name usable in a signal: ${JSON.stringify(field)}`);
  }
  if (index === undefined) return `${SIGNAL_NAME_PREFIX}${message}.${field}`;
  if (!Number.isInteger(index) || index < 0 || index > MAX_SIGNAL_INDEX) {
    throw new RangeError(`signal index must be an integer from 0 to ${MAX_SIGNAL_INDEX}: ${index}`);
  }
  return `${SIGNAL_NAME_PREFIX}${message}.${field}[${index}]`;
}

/** `mavlink.UNKNOWN_<id>.raw` for a message id the server could not decode. */
export function unknownSignalName(msgid: number): string {
  if (!Number.isInteger(msgid) || msgid < 0 || msgid > MAX_MAVLINK_MSGID) {
    throw new RangeError(`MAVLink message id must be an integer from 0 to ${MAX_MAVLINK_MSGID}: ${msgid}`);
  }
  return `${SIGNAL_NAME_PREFIX}UNKNOWN_${msgid}.${UNKNOWN_FIELD}`;
}

/** The parts of a signal name, or null for anything signalName / unknownSignalName would not produce. */
export function parseSignalName(name: string): ParsedSignalName | null {
  if (typeof name !== 'string') return null;
  const m = SIGNAL_RE.exec(name);
  if (!m) return null;
  const message = m[1]!;
  const field = m[2]!;
  if (message.length > MAX_IDENTIFIER_LENGTH || field.length > MAX_IDENTIFIER_LENGTH) return null;

  if (message.startsWith(UNKNOWN_PREFIX)) {
    // The UNKNOWN_ namespace holds only the raw payload: canonical id, field `raw`, no index.
    const unknown = UNKNOWN_MESSAGE_RE.exec(message);
    if (!unknown || field !== UNKNOWN_FIELD || m[3] !== undefined) return null;
    const msgid = Number(unknown[1]);
    if (msgid > MAX_MAVLINK_MSGID) return null;
    return { message, field, unknown: msgid };
  }

  if (m[3] === undefined) return { message, field };
  const index = Number(m[3]);
  if (index > MAX_SIGNAL_INDEX) return null;
  return { message, field, index };
}

export function isSignalName(name: unknown): name is string {
  return typeof name === 'string' && parseSignalName(name) !== null;
}
