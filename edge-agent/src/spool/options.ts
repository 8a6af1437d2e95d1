// The spool's settings: what a caller may set (SpoolOptions), the defaults, and the checks that refuse
// a setting the spool cannot honour, in one place so every part reads the same resolved values.
import { withDefaults } from '../core/option-defaults.ts';
import { RECORD_HEADER_BYTES, SEGMENT_HEADER_BYTES } from './record-format.ts';

export type FullPolicy = 'drop-oldest' | 'reject-new';

export interface SpoolOptions {
  /** Spool directory; created if missing. One per dataset / stream key. */
  readonly dir: string;
  /** Roll to a new segment file at this size. Default 16 MiB. */
  readonly segmentBytes?: number;
  /** Bound on all segments, buffered bytes included. Default 1 GiB; at least 2 × segmentBytes. */
  readonly maxBytes?: number;
  /** What to do when maxBytes would be exceeded. Default 'drop-oldest' (see spool.ts). */
  readonly fullPolicy?: FullPolicy;
  /** Group-commit window: buffered records are written at most this long after the first. Default 10 ms. */
  readonly flushIntervalMs?: number;
  /** Flush as soon as this many bytes are buffered. Default 1 MiB. */
  readonly flushBytes?: number;
  /** Acks are persisted at most this long after ack(). Default 100 ms. */
  readonly ackPersistIntervalMs?: number;
  /** append() throws when this much is buffered and not yet on disk (disk stalled). Default 64 MiB. */
  readonly maxPendingBytes?: number;
  /** One in-memory index entry (seq → byte offset) per this many records. Default 64. */
  readonly indexStride?: number;
}

const MiB = 1024 * 1024;
const DEFAULTS = {
  segmentBytes: 16 * MiB,
  maxBytes: 1024 * MiB,
  fullPolicy: 'drop-oldest',
  flushIntervalMs: 10,
  flushBytes: 1 * MiB,
  ackPersistIntervalMs: 100,
  maxPendingBytes: 64 * MiB,
  indexStride: 64,
} as const;
/** Index offsets are uint32. */
const MAX_SEGMENT_BYTES = 1024 * MiB;

export type ResolvedOptions = { -readonly [K in keyof Required<Omit<SpoolOptions, 'dir'>>]: Required<SpoolOptions>[K] };

export function resolveOptions(options: SpoolOptions): ResolvedOptions {
  const o = withDefaults<ResolvedOptions>(DEFAULTS, options);
  const int = (name: keyof ResolvedOptions, min: number, max = Number.MAX_SAFE_INTEGER): void => {
    const v = o[name];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min || v > max) {
      throw new RangeError(`spool option ${name} must be an integer in [${min}, ${max}], got ${String(v)}`);
    }
  };
  int('segmentBytes', SEGMENT_HEADER_BYTES + RECORD_HEADER_BYTES, MAX_SEGMENT_BYTES);
  int('maxBytes', 2 * o.segmentBytes);
  int('flushIntervalMs', 0);
  int('flushBytes', 1);
  int('ackPersistIntervalMs', 0);
  int('maxPendingBytes', 1);
  int('indexStride', 1);
  if (o.fullPolicy !== 'drop-oldest' && o.fullPolicy !== 'reject-new') {
    throw new RangeError(`spool option fullPolicy must be 'drop-oldest' or 'reject-new', got ${String(o.fullPolicy)}`);
  }
  return o;
}
