// What every vehicle-link source gives the pipeline. Sources only ever read: none of them has, or
// is handed, anything that can transmit to the vehicle (the serial source's port type has no write,
// the UDP source never sends), so the agent cannot command a vehicle by accident.

export interface SourceChunk {
  readonly bytes: Uint8Array;
  /**
   * µs since the Unix epoch: the recorder's timestamp for a tlog record, else the agent clock when
   * the bytes arrived. A frame gets the time of the chunk that completed it.
   */
  readonly receivedAtUs: number;
  /** Who sent it (UDP peer address): bytes of different origins are framed separately. */
  readonly origin?: string;
  /** File replay: the bytes' range in the file, so a crashed replay can resume after the last frame spooled. */
  readonly position?: { readonly start: number; readonly end: number };
}

export interface SourceStats {
  /** Bytes read from the link or file (a tlog's timestamps included). */
  readonly bytesRead: number;
  readonly chunks: number;
  /** Bytes the source itself could not use (a tlog's junk between records). */
  readonly discardedBytes: number;
  /** Bytes lost because the pipeline fell too far behind a live link. */
  readonly droppedBytes: number;
}

export interface SourceProgress {
  readonly bytesRead: number;
  readonly totalBytes: number;
}

export type SourceKind = 'serial' | 'udp' | 'tlog' | 'raw';

export interface Source {
  readonly kind: SourceKind;
  /** e.g. `serial /dev/ttyUSB0 @ 57600`. */
  readonly description: string;
  /** Receive times come from a recording (tlog), not the agent clock. */
  readonly recordedTime: boolean;
  /** The chunks, once; ends when the source ends (end of file) or is closed. */
  chunks(): AsyncIterable<SourceChunk>;
  /**
   * The source's clock in µs, never ahead of data not yet handed out: the agent clock for a live
   * link (or the receive time of the oldest chunk still queued), the replay clock for a recording.
   * Link-loss detection ticks on it.
   */
  now(): number;
  /** Short state for the operator: `open`, `waiting for /dev/ttyUSB0 (ENOENT)`, `ended`… */
  state(): string;
  /** True once every byte of the input has been handed out (end of a replayed file; never for a live link). */
  ended(): boolean;
  stats(): SourceStats;
  /** File replay only. */
  progress(): SourceProgress | null;
  /** Stops reading; chunks() ends after what was already handed out. */
  close(): Promise<void>;
}
