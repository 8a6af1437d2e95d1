// How the spool reports trouble: the errors its calls throw, and the warnings it emits for what it
// survives (records dropped by policy, damage found while reading, a file it could not delete).
export class SpoolFullError extends Error {
  override readonly name = 'SpoolFullError';
  readonly reason: 'max-bytes' | 'max-pending';
  constructor(reason: 'max-bytes' | 'max-pending', message: string) {
    super(message);
    this.reason = reason;
  }
}

export class SpoolClosedError extends Error {
  override readonly name = 'SpoolClosedError';
}

export class SpoolFormatError extends Error {
  override readonly name = 'SpoolFormatError';
}

export type SpoolWarning =
  | {
      readonly kind: 'dropped-oldest';
      readonly segment: string;
      /** Unacknowledged records lost. */
      readonly records: number;
      readonly firstSeq: bigint;
      readonly lastSeq: bigint;
    }
  | { readonly kind: 'over-budget'; readonly bytes: number; readonly maxBytes: number }
  | { readonly kind: 'corrupt-read'; readonly segment: string; readonly offset: number; readonly reason: string }
  | { readonly kind: 'unlink-failed'; readonly segment: string; readonly error: unknown }
  | { readonly kind: 'state-persist-failed'; readonly error: unknown };
