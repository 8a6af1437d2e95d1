import { crcExtraOf, parseSingleFrame, type SingleFrameResult } from '@sortie/contracts/mavlink';
import { ApiError } from '../../http/api-error.ts';
import { frameTime, visitFrame, type SampleValue } from './decode.ts';
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
  /** One array per column of `layout`; each as long as `frames`. */
  readonly values: Array<Array<SampleValue | null>>;
  /** Which columns hold at least one value in this batch. */
  readonly present: Uint8Array;

  constructor(layout: MessageColumns) {
    this.layout = layout;
    this.values = layout.columns.map(() => []);
    this.present = new Uint8Array(layout.columns.length);
  }
}

const REASONS: Record<Extract<SingleFrameResult, { ok: false }>['reason'], string> = {
  'start-byte': 'does not start with a MAVLink start byte (0xFE or 0xFD)',
  'incompat-flags': 'sets MAVLink 2 incompat flags this server does not understand',
  length: 'is not exactly one complete MAVLink frame (its length disagrees with the header)',
  crc: 'fails its MAVLink CRC',
};

/** 64-bit integers beyond this are not exact as doubles; their decimal text is kept as well. */
const EXACT_LIMIT = BigInt(Number.MAX_SAFE_INTEGER);

export interface BatchMark {
  frames: number;
  samples: number;
  rows: number;
  texts: number;
  bytes: number;
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
  // Per sample (the former one-row-per-field view; the bench's decode baseline counts these).
  readonly rowFrame: number[] = [];
  readonly signal: string[] = [];
  /** The value as a double; meaningful where `hasDouble` is 1. */
  readonly value: number[] = [];
  readonly hasDouble: number[] = [];
  /** Sparse: rows holding text (char fields, exact spellings of 64-bit integers beyond 2^53). */
  readonly textRows: number[] = [];
  readonly texts: string[] = [];
  /** Sparse: rows holding raw payloads (mavlink.UNKNOWN_<id>.raw). */
  readonly bytesRows: number[] = [];
  readonly bytes: Uint8Array[] = [];

  /** The system id every frame must carry; set by the first frame when undefined. */
  sysid: number | undefined;

  #frame = 0;
  #group: MessageGroup | undefined;
  #sampleCount = 0;
  #column = 0;
  readonly #visit = (signal: string, value: SampleValue): void => {
    const group = this.#group!;
    const c = this.#column++;
    group.values[c]!.push(value);
    group.present[c] = 1;
    this.#sampleCount++;
    if (!this.#samples) return;
    const row = this.signal.length;
    this.signal.push(signal);
    this.rowFrame.push(this.#frame);
    if (typeof value === 'number') {
      this.value.push(value);
      this.hasDouble.push(1);
    } else if (typeof value === 'bigint') {
      this.value.push(Number(value));
      this.hasDouble.push(1);
      if (value > EXACT_LIMIT || value < -EXACT_LIMIT) {
        this.textRows.push(row);
        this.texts.push(value.toString());
      }
    } else if (typeof value === 'string') {
      this.value.push(0);
      this.hasDouble.push(0);
      this.textRows.push(row);
      this.texts.push(value);
    } else {
      this.value.push(0);
      this.hasDouble.push(0);
      this.bytesRows.push(row);
      this.bytes.push(value);
    }
  };

  /** Also keep the per-sample view (signal, value per field): tests and the decode baseline use it. */
  readonly #samples: boolean;

  constructor(sysid?: number, options: { samples?: boolean } = {}) {
    this.sysid = sysid;
    this.#samples = options.samples ?? false;
  }

  get frames(): number {
    return this.frameSeq.length;
  }

  /** Rows of the per-sample view (0 unless it was asked for). */
  get rows(): number {
    return this.signal.length;
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
    const parsed = parseSingleFrame(bytes, crcExtraOf);
    if (!parsed.ok) throw new ApiError('invalid_request', `${locate(index)}: the bytes member ${REASONS[parsed.reason]}`);
    const frame = parsed.frame;
    if (this.sysid === undefined) this.sysid = frame.sysid;
    else if (frame.sysid !== this.sysid) {
      throw new ApiError(
        'invalid_request',
        `${locate(index)}: frame of MAVLink system id ${frame.sysid}, but this dataset's frames are of system id ${this.sysid}; a narrow dataset holds one system id, so open one dataset and one stream per system id (mavlink-raw-v1 rule 7)`,
      );
    }
    this.#frame = this.frameSeq.length;
    this.frameSeq.push(frameSeq);
    this.receivedUs.push(Number.isFinite(receivedUs) ? receivedUs : nowUs);
    this.compid.push(frame.compid);
    const time = frameTime(frame);
    let boot = NaN;
    let unix = NaN;
    let gps = NaN;
    if (time) {
      if (time.bootUs !== undefined) boot = Number(time.bootUs);
      // Beyond 2^53 µs (year 2255) a "Unix time" is garbage, not a clock.
      if (time.unixUs !== undefined && time.unixUs <= EXACT_LIMIT) unix = Number(time.unixUs);
      if (time.timeUnixUsec !== undefined && time.timeUnixUsec !== 0n && time.timeBootMs !== undefined && Number.isFinite(unix)) {
        gps = unix - time.timeBootMs * 1000;
      }
    }
    this.bootUs.push(boot);
    this.unixUs.push(unix);
    this.gpsOffsetUs.push(gps);
    this.msgid.push(frame.msgid);
    let group = this.groups.get(frame.msgid);
    if (!group) this.groups.set(frame.msgid, (group = new MessageGroup(messageColumns(frame.msgid))));
    group.frames.push(this.#frame);
    this.#group = group;
    this.#column = 0;
    visitFrame(frame, this.#visit);
    // A MAVLink 1 frame has no extension fields: those columns stay NULL (never measured).
    for (let c = this.#column; c < group.values.length; c++) group.values[c]!.push(null);
  }

  mark(): BatchMark {
    return { frames: this.frames, samples: this.#sampleCount, rows: this.rows, texts: this.texts.length, bytes: this.bytes.length };
  }

  /** Forget everything added after `mark` (a message is staged whole or not at all). */
  rollback(mark: BatchMark, sysid: number | undefined): void {
    for (const [msgid, group] of this.groups) {
      let keep = group.frames.length;
      while (keep > 0 && group.frames[keep - 1]! >= mark.frames) keep--;
      if (keep === 0) this.groups.delete(msgid);
      else if (keep < group.frames.length) {
        group.frames.length = keep;
        for (const column of group.values) column.length = keep;
        // Recomputed from the values kept (a rollback is rare; tracking it per frame would cost every frame).
        group.present.fill(0);
        group.values.forEach((column, c) => {
          if (column.some((v) => v !== null)) group.present[c] = 1;
        });
      }
    }
    for (const a of [this.frameSeq, this.receivedUs, this.compid, this.bootUs, this.unixUs, this.gpsOffsetUs, this.msgid]) a.length = mark.frames;
    for (const a of [this.rowFrame, this.signal, this.value, this.hasDouble]) a.length = mark.rows;
    this.textRows.length = mark.texts;
    this.texts.length = mark.texts;
    this.bytesRows.length = mark.bytes;
    this.bytes.length = mark.bytes;
    this.sysid = sysid;
    this.#sampleCount = mark.samples;
  }
}
