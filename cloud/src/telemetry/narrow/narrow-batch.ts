import { checkSingleFrame, crcExtraOf, readFrameHeader, type FrameHeader, type SingleFrameReason } from '@sortie/contracts/mavlink';
import { ServiceError } from '../../platform/errors.ts';
import { holdsNumbers, NumberColumn, valueAt, type BatchColumn } from './column-arrays.ts';
import { frameClocks, visitFrame, type FrameClocks, type SampleValue } from './decode.ts';
import { messageColumns, type MessageColumns } from './message-tables.ts';

/**
 * Frames of a mavlink-raw-v1 stream, decoded and waiting for one bulk write. Per frame: its sequence,
 * compid, message id and clocks. Per message id (one table row per frame, message-tables.ts): the
 * frames in arrival order and one value array per column, `null` where the frame did not carry the
 * column (an extension field of a MAVLink 1 frame). Nothing here touches the database.
 */

/** The frames of one message id in a batch, as the columns of its table. */
export class MessageGroup {
  readonly layout: MessageColumns;
  /** Indexes of the batch's frames, in arrival order. */
  readonly frames: number[] = [];
  /**
   * One array per column of `layout`; each as long as `frames`. Row r's columns at or beyond
   * `carried[r]` are NULL (a MAVLink 1 frame has no extension fields) and hold 0 here. Numeric columns
   * are NumberColumns (column-arrays.ts): their values stay unboxed.
   */
  readonly values: BatchColumn[];
  /** Per row: how many leading columns its frame carried. */
  readonly carried: number[] = [];
  /** Which columns hold at least one value in this batch. */
  readonly present: Uint8Array;

  constructor(layout: MessageColumns) {
    this.layout = layout;
    this.values = layout.columns.map((c) => (holdsNumbers(c.type) ? new NumberColumn() : []));
    this.present = new Uint8Array(layout.columns.length);
  }

  /** Empty again, keeping the columns' room (GroupPool). */
  reset(): void {
    this.frames.length = 0;
    this.carried.length = 0;
    for (const column of this.values) column.length = 0;
    this.present.fill(0);
  }

  /** Column `c` with NULL where a row's frame did not carry it (for text array literals). */
  column(c: number): Array<SampleValue | null> {
    const column = this.values[c]!;
    return this.carried.map((carried, r) => (c < carried ? valueAt(column, r) : null));
  }
}

/**
 * Message groups of written batches, kept for the next batches of the same stream: a batch's groups
 * had a fresh typed array per numeric column, grown by doubling, which was a twentieth of the ingest
 * server's CPU besides the garbage. A group is given back only once nothing reads its batch any more
 * (its write has committed), and taken back empty with its columns' room.
 */
export class GroupPool {
  readonly #free = new Map<number, MessageGroup[]>();

  /** At most this many idle groups per message id: a stream has at most three batches alive (staged, waiting, writing). */
  static readonly KEPT = 2;

  take(msgid: number): MessageGroup | undefined {
    const group = this.#free.get(msgid)?.pop();
    group?.reset();
    return group;
  }

  /** Give back every group of `batch`, which must not be read again. */
  give(batch: NarrowBatch): void {
    for (const [msgid, group] of batch.groups) {
      let free = this.#free.get(msgid);
      if (!free) this.#free.set(msgid, (free = []));
      if (free.length < GroupPool.KEPT) free.push(group);
    }
    batch.groups.clear();
  }
}

const REASONS: Record<SingleFrameReason, string> = {
  'start-byte': 'does not start with a MAVLink start byte (0xFE or 0xFD)',
  'incompat-flags': 'sets MAVLink 2 incompat flags this server does not understand',
  length: 'is not exactly one complete MAVLink frame (its length disagrees with the header)',
  crc: 'fails its MAVLink CRC',
};

/** One frame's header, decodable view and clocks at a time (written in place): nothing else allocated per frame. */
const HEADER: FrameHeader = { version: 1, msgid: 0, sysid: 0, compid: 0, payloadOffset: 0, payloadLength: 0 };
const NO_PAYLOAD = new Uint8Array(0);
const FRAME: { version: 1 | 2; msgid: number; payload: Uint8Array } = { version: 1, msgid: 0, payload: NO_PAYLOAD };
const CLOCKS: FrameClocks = { bootUs: NaN, unixUs: NaN, gpsOffsetUs: NaN };

export interface BatchMark {
  frames: number;
  samples: number;
}

export class NarrowBatch {
  // Per frame.
  readonly frameSeq: number[] = [];
  readonly receivedUs: number[] = [];
  readonly compid: number[] = [];
  /** Boot time in µs; NaN when the frame carries none. */
  readonly bootUs: number[] = [];
  /** Vehicle Unix time in µs; NaN when the frame carries none. */
  readonly unixUs: number[] = [];
  /** time_unix_usec − boot time of SYSTEM_TIME with GPS time; NaN otherwise. */
  readonly gpsOffsetUs: number[] = [];
  readonly msgid: number[] = [];
  /** Frames by message id. */
  readonly groups = new Map<number, MessageGroup>();

  /** The system id every frame must carry; set by the first frame when undefined. */
  sysid: number | undefined;

  #group: MessageGroup | undefined;
  #sampleCount = 0;
  #column = 0;
  readonly #visit = (_signal: string, value: SampleValue): void => {
    const group = this.#group!;
    const c = this.#column++;
    (group.values[c] as { push(value: SampleValue): void }).push(value);
    group.present[c] = 1;
    this.#sampleCount++;
  };

  readonly #pool: GroupPool | undefined;

  /** `pool`: where groups come from and go back to (the sink's); without one, each group is new. */
  constructor(sysid?: number, pool?: GroupPool) {
    this.sysid = sysid;
    this.#pool = pool;
  }

  get frames(): number {
    return this.frameSeq.length;
  }

  /** Samples decoded: values of fields, array elements and raw payloads (what one-row-per-field stored as rows). */
  get samples(): number {
    return this.#sampleCount;
  }

  /**
   * Decode one point's frame into rows. `receivedUs` NaN (no timestamp on the point) takes `nowUs`.
   * Throws invalid_request naming the point (`locate(index)`) for anything that is not one valid frame
   * of the batch's system id.
   */
  add(bytes: Uint8Array, receivedUs: number, frameSeq: number, nowUs: number, locate: (index: number) => string, index: number): void {
    this.addAt(bytes, 0, bytes.length, receivedUs, frameSeq, nowUs, locate, index);
  }

  /**
   * add() of the frame held in `buf[start, end)` (a point's bytes inside the request): the header is read
   * in place and only the payload gets a view, so a frame costs one small allocation, not five.
   */
  addAt(buf: Uint8Array, start: number, end: number, receivedUs: number, frameSeq: number, nowUs: number, locate: (index: number) => string, index: number): void {
    const reason = checkSingleFrame(buf, start, end, crcExtraOf);
    if (reason !== undefined) throw new ServiceError('invalid_request', `${locate(index)}: the bytes member ${REASONS[reason]}`);
    readFrameHeader(buf, start, HEADER);
    const frame = FRAME;
    frame.version = HEADER.version;
    frame.msgid = HEADER.msgid;
    frame.payload = buf.subarray(HEADER.payloadOffset, HEADER.payloadOffset + HEADER.payloadLength);
    const sysid = HEADER.sysid;
    if (this.sysid === undefined) this.sysid = sysid;
    else if (sysid !== this.sysid) {
      throw new ServiceError(
        'invalid_request',
        `${locate(index)}: frame of MAVLink system id ${sysid}, but this dataset's frames are of system id ${this.sysid}; a narrow dataset holds one system id, so open one dataset and one stream per system id (mavlink-raw-v1 rule 7)`,
      );
    }
    const at = this.frameSeq.length;
    this.frameSeq.push(frameSeq);
    this.receivedUs.push(Number.isFinite(receivedUs) ? receivedUs : nowUs);
    this.compid.push(HEADER.compid);
    frameClocks(frame, CLOCKS);
    this.bootUs.push(CLOCKS.bootUs);
    this.unixUs.push(CLOCKS.unixUs);
    this.gpsOffsetUs.push(CLOCKS.gpsOffsetUs);
    this.msgid.push(frame.msgid);
    let group = this.groups.get(frame.msgid);
    if (!group) this.groups.set(frame.msgid, (group = this.#pool?.take(frame.msgid) ?? new MessageGroup(messageColumns(frame.msgid))));
    group.frames.push(at);
    this.#group = group;
    this.#column = 0;
    visitFrame(frame, this.#visit);
    // A MAVLink 1 frame has no extension fields: those columns stay NULL (never measured).
    group.carried.push(this.#column);
    for (let c = this.#column; c < group.values.length; c++) group.values[c]!.push(0);
    // The view must not keep the request's buffer alive once the frame is read.
    frame.payload = NO_PAYLOAD;
  }

  /**
   * One message of an imported log as a row of its type's table (`layout`: the log's columns, keyed at
   * or above LOG_TABLE_KEY_BASE). A log has one clock and one component: compid 1. `unixUs` and
   * `gpsOffsetUs` are NaN when the log has no GPS time (the row is then placed by `receivedUs`).
   * `values` follows layout.columns and is copied.
   */
  addLogRow(layout: MessageColumns, frameSeq: number, receivedUs: number, bootUs: number, unixUs: number, gpsOffsetUs: number, values: readonly SampleValue[]): void {
    const at = this.frameSeq.length;
    this.frameSeq.push(frameSeq);
    this.receivedUs.push(receivedUs);
    this.compid.push(1);
    this.bootUs.push(bootUs);
    this.unixUs.push(unixUs);
    this.gpsOffsetUs.push(gpsOffsetUs);
    this.msgid.push(layout.msgid);
    let group = this.groups.get(layout.msgid);
    if (!group) this.groups.set(layout.msgid, (group = this.#pool?.take(layout.msgid) ?? new MessageGroup(layout)));
    group.frames.push(at);
    const n = layout.columns.length;
    for (let c = 0; c < n; c++) {
      (group.values[c] as { push(value: SampleValue): void }).push(values[c]!);
      group.present[c] = 1;
    }
    group.carried.push(n);
    this.#sampleCount += n;
  }

  mark(): BatchMark {
    return { frames: this.frames, samples: this.#sampleCount };
  }

  /** Forget everything added after `mark` (a message is staged whole or not at all). */
  rollback(mark: BatchMark, sysid: number | undefined): void {
    for (const [msgid, group] of this.groups) {
      let keep = group.frames.length;
      while (keep > 0 && group.frames[keep - 1]! >= mark.frames) keep--;
      if (keep === 0) this.groups.delete(msgid);
      else if (keep < group.frames.length) {
        group.frames.length = keep;
        group.carried.length = keep;
        for (const column of group.values) column.length = keep;
        // Recomputed from the rows kept (a rollback is rare; tracking it per frame would cost every frame).
        group.present.fill(0);
        for (const carried of group.carried) group.present.fill(1, 0, carried);
      }
    }
    for (const a of [this.frameSeq, this.receivedUs, this.compid, this.bootUs, this.unixUs, this.gpsOffsetUs, this.msgid]) a.length = mark.frames;
    this.sysid = sysid;
    this.#sampleCount = mark.samples;
  }
}
