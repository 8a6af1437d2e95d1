/**
 * PX4 ULog reader: a push parser over the file's bytes (records.ts is the contract).
 *
 * Spec: https://docs.px4.io/main/en/dev_log/ulog_file_format.html. pyulog (PX4/pyulog, core.py) is the
 * reference behaviour; the tests compare against its digests (testdata/*.pyulog.json).
 *
 * Why not @foxglove/ulog's `ULog` class: it wants random access, builds an in-memory time index of every
 * message (~100 bytes each, over a gigabyte for a 500 MB log) and throws at the first corrupt message. So
 * this file frames the messages itself (3-byte header: u16 size, u8 type) and keeps at most one unfinished
 * message between push() calls. The library's building blocks parse what they can: formats and info or
 * parameter keys (parseMessageDefinition / parseFieldDefinition) and info / parameter values
 * (parseBasicFieldValue).
 *
 * 'D' data payloads are decoded by a flattener compiled per subscription (a list of leaf fields with their
 * byte offsets, read with DataView), not by the library's parseMessage: parseMessage allocates an object
 * tree per message that we would then walk to flatten (measured on the fixtures: ~0.5 M messages/s for
 * parseMessage + flatten alone, against ~3.5 M/s for this whole reader, framing included), it throws for
 * a nested struct without a `timestamp` field, which the spec does not require, and it drops every field
 * starting with `_`, where only `_padding…` is padding. ulog.test.ts proves, on every data message of both
 * fixtures, that the values here equal the library's parseMessage output flattened.
 *
 * Mapping onto records.ts:
 * - One LogMessageType per subscription: topic name, multi_id as instance. It is announced lazily, just
 *   before the topic's first data message, so a subscription that never logs anything (common: PX4
 *   subscribes to every optional topic) creates no empty table. Fields are flattened like pyulog
 *   (`q[0]`, `esc[0].esc_rpm`, `previous.lat`); padding fields (`_padding…`, at any depth) are dropped;
 *   the top-level uint64 `timestamp` is bootUs, not a field. A char[N] is one text field: the bytes up to
 *   the first NUL as UTF-8 (pyulog gives N int8 elements `name[i]` instead; the tests join them).
 * - 'P' in the definitions section: param(null, …); in the data section (a changed parameter):
 *   param(t, …) where t is, as pyulog's changed_parameters have it, the largest data-message timestamp
 *   seen so far (the file header's timestamp before any). 'Q' (default values): ignored.
 * - 'I': info(key, value), strings as strings, numbers as numbers, 64-bit integers as decimal strings,
 *   bool as 0/1; info values that are arrays other than char[] are not reported. 'M' (multi info): the
 *   text ones (boot_console_output, perf_counter_*, excluded_optional_topics…) are reported at end() as
 *   one info per key: continuation pieces concatenated, separate entries joined by "\n". Binary ones
 *   (metadata_events) are not reported as info.
 * - 'L' / 'C': text(timestamp, level, message, 'ulog.logging'[, {tag}]).
 * - The `event` topic (PX4 events) is stored as data and also given to text(…, 'ulog.event', {id,
 *   sequence, arguments}) with the level pyulog shows: the internal one, (log_levels >> 4) & 0xF; levels
 *   8 (protocol) and 9 (disabled) are not logged text, as in pyulog. The text is `event 0x<id>`: the
 *   messages are in the log's `metadata_events` multi-info, an xz-compressed libevents JSON, and the one
 *   small pure wasm xz package (xz-decompress) only decompresses asynchronously (a web ReadableStream),
 *   which push() cannot wait for. The compressed metadata is kept as `eventMetadataXz` so a later,
 *   asynchronous step can render the texts from each event's id and arguments.
 * - GPS clock: each `vehicle_gps_position` / `sensor_gps` instance 0 message with time_utc_usec > 0 and
 *   fix_type >= 3 gives clock(timestamp, time_utc_usec).
 * - 'O' dropouts are counted (`dropouts`, `dropoutMs`), 'S' sync messages skipped.
 *
 * Corruption (pyulog's approach, made streaming): a message that cannot be read but whose size leads to a
 * believable next header (e.g. data for a msg_id never subscribed, a message type added by a newer
 * logger) is skipped alone; otherwise the reader resynchronises at the first position that is either the
 * sync magic (pyulog's _find_sync) or a believable header followed by another believable header, and
 * reports the bytes in between as skipped. A partial message at end() is a truncated tail.
 * A file without the ULog magic, or with incompatible flag bits the spec says a reader must not ignore,
 * throws NotThisFormatError before any sink call. The version byte is not checked: the spec leaves
 * compatibility to the flag bits, and pyulog reads any version too.
 * Appended data (incompat flag bit 0): as pyulog, a message running past an appended offset is
 * discarded (reported skipped) and reading continues at the offset.
 */
import {
  parseBasicFieldValue,
  parseFieldDefinition,
  parseMessageDefinition,
  type Field,
  type MessageDefinition,
} from '@foxglove/ulog';
import {
  NotThisFormatError,
  type LogColumnType,
  type LogField,
  type LogLevel,
  type LogMessageType,
  type LogParser,
  type LogSink,
  type LogValue,
  type ParserOptions,
} from './records.ts';

const MAGIC = [0x55, 0x4c, 0x6f, 0x67, 0x01, 0x12, 0x35];
const SYNC_MAGIC = [0x2f, 0x73, 0x13, 0x20, 0x25, 0x0c, 0xbb, 0x12];
const FILE_HEADER_BYTES = 16;
const MSG_HEADER_BYTES = 3;

/** pyulog's bound for a believable message size when the type is unknown (_check_packet_corruption). */
const MAX_PLAUSIBLE_SIZE = 10_000;
/** How many bytes tell whether a header is believable: the 3-byte header and up to 4 payload bytes. */
const HEADER_PEEK = 7;
/** How many unreadable-but-believable messages in a row may separate a skipped one from a readable one. */
const MAX_WEAK_HOPS = 4;
/** Text multi-info kept for end(), at most (a hostile file could repeat it without end). */
const MAX_MULTI_INFO_CHARS = 1 << 20;
/** Event metadata kept, at most (PX4's is ~16 kB compressed). */
const MAX_EVENT_METADATA_BYTES = 4 << 20;

const MSG = {
  flagBits: 0x42, // B
  format: 0x46, // F
  info: 0x49, // I
  infoMulti: 0x4d, // M
  param: 0x50, // P
  paramDefault: 0x51, // Q
  addLogged: 0x41, // A
  removeLogged: 0x52, // R
  data: 0x44, // D
  logging: 0x4c, // L
  loggingTagged: 0x43, // C
  sync: 0x53, // S
  dropout: 0x4f, // O
} as const;

/** Leaf kinds of the compiled flattener (numbers so the decode loop is one switch over small ints). */
const K = {
  bool: 0,
  int8: 1,
  uint8: 2,
  int16: 3,
  uint16: 4,
  int32: 5,
  uint32: 6,
  int64: 7,
  uint64: 8,
  float: 9,
  double: 10,
  text: 11,
} as const;

const BASIC: Record<string, { size: number; kind: number; column: LogColumnType }> = {
  bool: { size: 1, kind: K.bool, column: 'int2' },
  int8_t: { size: 1, kind: K.int8, column: 'int2' },
  uint8_t: { size: 1, kind: K.uint8, column: 'int2' },
  int16_t: { size: 2, kind: K.int16, column: 'int2' },
  uint16_t: { size: 2, kind: K.uint16, column: 'int4' },
  int32_t: { size: 4, kind: K.int32, column: 'int4' },
  uint32_t: { size: 4, kind: K.uint32, column: 'int8' },
  int64_t: { size: 8, kind: K.int64, column: 'int8' },
  uint64_t: { size: 8, kind: K.uint64, column: 'uint64' },
  float: { size: 4, kind: K.float, column: 'float4' },
  double: { size: 8, kind: K.double, column: 'float8' },
  char: { size: 1, kind: K.text, column: 'text' },
};

/** A subscription ('A') compiled for decoding its 'D' messages. */
interface Topic {
  name: string;
  multiId: number;
  fields: LogField[];
  kinds: Uint8Array;
  /** Byte offset of each leaf in the payload (after the 2-byte msg_id). */
  offsets: Uint32Array;
  /** Bytes of each text leaf (char[N]); 0 for the others. */
  lengths: Uint32Array;
  /** Offset of the top-level uint64 `timestamp`, or -1 when the format has none. */
  timestampOffset: number;
  /** Smallest and largest payload accepted, as pyulog: trailing padding may be left out by the logger. */
  minSize: number;
  maxSize: number;
  values: LogValue[];
  /** The LogMessageType id once announced, -1 before. */
  typeId: number;
  special: Special | undefined;
}

type Special =
  | { kind: 'event'; id: number; sequence: number; logLevels: number; args: number[] }
  | { kind: 'gps'; timeUtc: number; fixType: number };

/** Whether a header at some position looks like the start of a message. */
const STRONG = 2; // a known type with a size that fits it (a D: a subscribed msg_id and its size)
const WEAK = 1; // a size a message could have, but not known to be readable (pyulog would skip it by its size)
const BAD = 0; // not a message start
const NEED_MORE = -1;

type Stage = 'header' | 'messages' | 'resync';

const utf8 = new TextDecoder();

/** The ULog file magic (7 bytes, before the version byte). */
export function looksLikeULog(head: Uint8Array): boolean {
  if (head.length < MAGIC.length) return false;
  return MAGIC.every((b, i) => head[i] === b);
}

/** The reader's extras beyond LogParser: dropout statistics ('O' messages) for the import's summary. */
export interface ULogParser extends LogParser {
  /** How many dropout messages the logger wrote (it lost data because its buffer was full). */
  readonly dropouts: number;
  /** Their summed duration, ms. */
  readonly dropoutMs: number;
  /**
   * The log's PX4 event definitions (`metadata_events` multi-info: xz-compressed libevents JSON), its first
   * entry's pieces joined as pyulog's px4_events uses them; undefined when the log has none.
   */
  readonly eventMetadataXz: Uint8Array | undefined;
}

/**
 * `clockOnly`: a first look at the file for its clock (the importer's pre-pass). Data messages of topics
 * other than the GPS ones and `event` are passed to data() with their timestamp only (type id -1, no
 * values), undecoded.
 */
export function createULogParser(sink: LogSink, options: ParserOptions = {}): ULogParser {
  return new ULogReader(sink, options.clockOnly ?? false);
}

const NO_VALUES: readonly LogValue[] = [];

class ULogReader implements ULogParser {
  readonly #sink: LogSink;
  readonly #clockOnly: boolean;

  // --- streaming state: bytes of the unfinished message kept between push() calls
  #pending = new Uint8Array(1 << 16);
  #pendingLength = 0;
  /** File offset of the first byte not yet consumed by #run (the start of #pending when it holds bytes). */
  #consumed = 0;
  /** Bytes #run needs from where it stopped before it can make progress. */
  #wanted = FILE_HEADER_BYTES;
  #received = 0;
  #ended = false;
  #viewBuffer: Uint8Array | undefined;
  #view: DataView = new DataView(new ArrayBuffer(0));

  // --- file state
  #stage: Stage = 'header';
  /** False while in the definitions section (until the first A, L or C, as pyulog decides it). */
  #inData = false;
  /** Largest data timestamp seen, the file header's timestamp before any: pyulog's _last_timestamp. */
  #lastTimestamp = 0;
  #appendedOffsets: number[] = [];
  #formats = new Map<string, MessageDefinition>();
  #topicsById: (Topic | undefined)[] = [];
  #types = new Map<string, { type: LogMessageType; signature: string }[]>();
  #nextTypeId = 0;
  #multiInfo = new Map<string, string[]>();
  #multiInfoChars = 0;

  // --- corruption state
  #badStart = 0;
  #badReason = '';
  /** A skipped message not yet reported, so runs of adjacent skips of one kind are one skipped() call. */
  #pendingSkip: { offset: number; bytes: number; reason: string } | undefined;

  dropouts = 0;
  dropoutMs = 0;
  #eventMetadata: Uint8Array[] = [];
  #eventMetadataBytes = 0;
  /** False once the first metadata_events entry is complete: later entries are not the ones pyulog reads. */
  #eventMetadataOpen = true;

  get eventMetadataXz(): Uint8Array | undefined {
    if (this.#eventMetadata.length === 0) return undefined;
    const joined = new Uint8Array(this.#eventMetadataBytes);
    let at = 0;
    for (const piece of this.#eventMetadata) {
      joined.set(piece, at);
      at += piece.length;
    }
    return joined;
  }

  constructor(sink: LogSink, clockOnly: boolean) {
    this.#sink = sink;
    this.#clockOnly = clockOnly;
  }

  get offset(): number {
    return this.#received;
  }

  push(chunk: Uint8Array): void {
    if (this.#ended) throw new Error('ULog reader: push() after end()');
    this.#received += chunk.length;
    let c = 0;
    while (c < chunk.length) {
      if (this.#pendingLength === 0) {
        // Nothing pending: read the chunk in place, then keep its unfinished tail.
        const stop = this.#run(chunk, c, chunk.length, false);
        this.#consumed += stop - c;
        this.#appendPending(chunk, stop, chunk.length);
        return;
      }
      // Bytes are pending: add only what the next step needs, so 1-byte chunks don't re-copy a message.
      const take = Math.min(Math.max(this.#wanted - this.#pendingLength, 1), chunk.length - c);
      this.#appendPending(chunk, c, c + take);
      c += take;
      // Refuse a file that is not a ULog as soon as its first bytes say so, however it is chunked.
      if (this.#stage === 'header') this.#checkMagic(this.#pending, 0, this.#pendingLength);
      if (this.#pendingLength < this.#wanted) continue;
      this.#runPending(false);
    }
  }

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    if (this.#stage === 'header') {
      throw new NotThisFormatError(
        this.#pendingLength === 0 ? 'empty file' : `not a ULog file: ${this.#pendingLength} bytes, shorter than its header`,
      );
    }
    this.#runPending(true);
    this.#flushSkip();
    for (const [key, entries] of this.#multiInfo) this.#sink.info(key, entries.join('\n'));
    this.#multiInfo.clear();
  }

  #runPending(final: boolean): void {
    const stop = this.#run(this.#pending, 0, this.#pendingLength, final);
    this.#consumed += stop;
    this.#pending.copyWithin(0, stop, this.#pendingLength);
    this.#pendingLength -= stop;
  }

  #appendPending(bytes: Uint8Array, from: number, to: number): void {
    const n = to - from;
    if (n <= 0) return;
    if (this.#pendingLength + n > this.#pending.length) {
      const grown = new Uint8Array(Math.max(this.#pending.length * 2, this.#pendingLength + n));
      grown.set(this.#pending.subarray(0, this.#pendingLength));
      this.#pending = grown;
    }
    this.#pending.set(bytes.subarray(from, to), this.#pendingLength);
    this.#pendingLength += n;
  }

  #viewOf(buf: Uint8Array): DataView {
    if (buf !== this.#viewBuffer) {
      this.#viewBuffer = buf;
      this.#view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    }
    return this.#view;
  }

  /**
   * Reads messages from buf[start, end) (file offset of `start`: #consumed) and returns where it stopped:
   * at `end`, or at a message it needs #wanted bytes of. With `final` it consumes everything.
   */
  #run(buf: Uint8Array, start: number, end: number, final: boolean): number {
    let pos = start;
    const at = (p: number) => this.#consumed + (p - start);
    for (;;) {
      const avail = end - pos;
      if (this.#stage === 'header') {
        this.#checkMagic(buf, pos, end);
        if (avail < FILE_HEADER_BYTES) {
          this.#wanted = FILE_HEADER_BYTES;
          return pos;
        }
        this.#lastTimestamp = readU64(this.#viewOf(buf), pos + 8);
        pos += FILE_HEADER_BYTES;
        this.#stage = 'messages';
        continue;
      }

      if (this.#stage === 'resync') {
        const found = this.#resync(buf, pos, end, final, at);
        if (found < 0) return final ? end : pos + -(found + 1);
        pos = found;
        continue;
      }

      // --- 'messages'
      if (avail === 0) return pos;
      const here = at(pos);
      const appended = this.#appendedOffsets[0];
      if (appended !== undefined && appended <= here) {
        this.#appendedOffsets.shift();
        continue;
      }
      if (avail < MSG_HEADER_BYTES) {
        if (final) return this.#truncatedTail(here, avail, end);
        this.#wanted = MSG_HEADER_BYTES;
        return pos;
      }
      const size = buf[pos]! | (buf[pos + 1]! << 8);
      const type = buf[pos + 2]!;
      const length = MSG_HEADER_BYTES + size;

      if (appended !== undefined && here + length > appended) {
        // The logger stopped mid-message and went on writing at the appended offset (pyulog: read_until).
        const n = Math.min(avail, appended - here);
        this.#skip(here, n, 'unfinished message before appended data');
        pos += n;
        continue;
      }

      // Fast path: a data message for a known subscription, whole in the buffer.
      if (type === MSG.data && avail >= length && size >= 2) {
        const topic = this.#topicsById[buf[pos + 3]! | (buf[pos + 4]! << 8)];
        if (topic !== undefined && size - 2 >= topic.minSize && size - 2 <= topic.maxSize) {
          this.#flushSkip();
          this.#data(topic, buf, pos + 5);
          pos += length;
          continue;
        }
      }

      const strength = this.#strength(buf, pos, end, here);
      if (strength === NEED_MORE && !final) {
        this.#wanted = HEADER_PEEK;
        return pos;
      }
      if (strength === BAD) {
        this.#startResync(here, `corrupt message header (type ${typeName(type)}, size ${size})`);
        pos += 1;
        continue;
      }
      if (avail < length) {
        if (final) return this.#truncatedTail(here, avail, end);
        this.#wanted = length;
        return pos;
      }
      const problem = this.#handle(type, buf, pos + MSG_HEADER_BYTES, size, here);
      if (problem === undefined) {
        pos += length;
        continue;
      }
      // Unreadable, but framed right if what follows is believable: skip only this message.
      const next = this.#leadsToStrong(buf, pos + length, end, final, here + length);
      if (next < 0) {
        this.#wanted = length - next;
        return pos;
      }
      if (next === 1) {
        this.#skip(here, length, problem);
        pos += length;
        continue;
      }
      this.#startResync(here, problem);
      pos += 1;
    }
  }

  #checkMagic(buf: Uint8Array, pos: number, end: number): void {
    for (let i = 0; i < MAGIC.length && pos + i < end; i++) {
      if (buf[pos + i] !== MAGIC[i]) throw new NotThisFormatError('not a ULog file (no ULog magic)');
    }
  }

  #truncatedTail(here: number, bytes: number, end: number): number {
    this.#skip(here, bytes, 'truncated tail: the file ends inside a message');
    return end;
  }

  #startResync(here: number, reason: string): void {
    this.#flushSkip();
    this.#stage = 'resync';
    this.#badStart = here;
    this.#badReason = reason;
  }

  /**
   * Looks for where messages start again after a corrupt stretch: the sync magic (resume after it, as
   * pyulog's _find_sync), or a believable header whose size leads to another believable header. Returns
   * the position to resume at, or -(1 + n) when it needs more bytes from pos + n (or reached the end).
   */
  #resync(buf: Uint8Array, pos: number, end: number, final: boolean, at: (p: number) => number): number {
    for (let p = pos; p < end; p++) {
      const first = this.#strength(buf, p, end, at(p));
      if (first === NEED_MORE && !final) return this.#needMore(p - pos, HEADER_PEEK);
      if (first === STRONG) {
        const length = MSG_HEADER_BYTES + (buf[p]! | (buf[p + 1]! << 8));
        const second = this.#leadsToStrong(buf, p + length, end, final, at(p + length));
        if (second < 0) return this.#needMore(p - pos, length - second);
        if (second === 1) {
          this.#endResync(at(p));
          return p;
        }
      }
      if (buf[p] === SYNC_MAGIC[0]) {
        if (end - p < SYNC_MAGIC.length) {
          if (!final) return this.#needMore(p - pos, SYNC_MAGIC.length);
        } else if (SYNC_MAGIC.every((b, i) => buf[p + i] === b)) {
          this.#endResync(at(p + SYNC_MAGIC.length));
          return p + SYNC_MAGIC.length;
        }
      }
    }
    if (final) {
      this.#sink.skipped(this.#badStart, at(end) - this.#badStart, `${this.#badReason}; no message after it`);
      return -1 - (end - pos);
    }
    // Everything scanned is part of the corrupt stretch; keep nothing.
    return this.#needMore(end - pos, 1);
  }

  /**
   * Whether the messages from buf[p] on are framed right: a STRONG header, reached directly or through at
   * most MAX_WEAK_HOPS believable-but-unreadable ones (a newer logger's message types, data for a topic
   * whose subscription was lost), or the end of the file. Returns 1 (yes), 0 (no), or -n when it needs n
   * bytes from p to tell.
   */
  #leadsToStrong(buf: Uint8Array, p: number, end: number, final: boolean, here: number): number {
    let q = p;
    for (let hop = 0; hop <= MAX_WEAK_HOPS; hop++) {
      if (final && q >= end) return 1; // a message ending at the end of the file (or cut short by it)
      const strength = this.#strength(buf, q, end, here + (q - p));
      if (strength === NEED_MORE) return final ? 1 : -(q - p + HEADER_PEEK);
      if (strength === STRONG) return 1;
      if (strength === BAD) return 0;
      q += MSG_HEADER_BYTES + (buf[q]! | (buf[q + 1]! << 8));
    }
    return 0;
  }

  #needMore(consumed: number, wanted: number): number {
    this.#wanted = wanted;
    return -1 - consumed;
  }

  #endResync(offset: number): void {
    this.#sink.skipped(this.#badStart, offset - this.#badStart, `${this.#badReason}; resynchronised after it`);
    this.#stage = 'messages';
  }

  #skip(offset: number, bytes: number, reason: string): void {
    const last = this.#pendingSkip;
    if (last !== undefined && last.offset + last.bytes === offset && last.reason === reason) {
      last.bytes += bytes;
      return;
    }
    this.#flushSkip();
    this.#pendingSkip = { offset, bytes, reason };
  }

  #flushSkip(): void {
    const last = this.#pendingSkip;
    if (last === undefined) return;
    this.#pendingSkip = undefined;
    this.#sink.skipped(last.offset, last.bytes, last.reason);
  }

  /**
   * How believable a message header at buf[p] is (see STRONG, WEAK, BAD); `here` is its file offset.
   * STRONG must be rare in random bytes, since two in a row end a resynchronisation: besides the type and
   * a size that fits it, it looks at the first payload bytes (a D's msg_id, a key's length and first
   * letter, a log level digit).
   */
  #strength(buf: Uint8Array, p: number, end: number, here: number): number {
    const avail = end - p;
    if (avail < MSG_HEADER_BYTES) return NEED_MORE;
    const size = buf[p]! | (buf[p + 1]! << 8);
    const type = buf[p + 2]!;
    if (size === 0 || type === 0) return BAD;
    const weak = size <= MAX_PLAUSIBLE_SIZE ? WEAK : BAD;
    switch (type) {
      case MSG.data: {
        if (size < 2) return BAD;
        if (avail < 5) return NEED_MORE;
        const topic = this.#topicsById[buf[p + 3]! | (buf[p + 4]! << 8)];
        return topic !== undefined && size - 2 >= topic.minSize && size - 2 <= topic.maxSize ? STRONG : weak;
      }
      case MSG.sync:
        if (size !== SYNC_MAGIC.length) return BAD;
        if (avail < 5) return NEED_MORE;
        return buf[p + 3] === SYNC_MAGIC[0] && buf[p + 4] === SYNC_MAGIC[1] ? STRONG : weak;
      case MSG.dropout:
        return size === 2 ? STRONG : weak;
      case MSG.removeLogged:
        return size <= 2 ? STRONG : weak;
      case MSG.logging:
      case MSG.loggingTagged: {
        const min = type === MSG.logging ? 9 : 11;
        if (size < min) return BAD;
        if (avail < 4) return NEED_MORE;
        const level = buf[p + 3]!;
        return level >= 0x30 && level <= 0x37 && size <= min + 2048 ? STRONG : weak;
      }
      case MSG.addLogged:
        if (size < 4) return BAD;
        if (avail < 7) return NEED_MORE;
        return size <= 3 + 255 && isNameStart(buf[p + 6]!) ? STRONG : weak;
      case MSG.format:
        if (size < 3) return BAD;
        if (avail < 4) return NEED_MORE;
        return size <= 8192 && isNameStart(buf[p + 3]!) ? STRONG : weak;
      case MSG.info:
      case MSG.param: {
        if (size < 3) return BAD;
        if (avail < 5) return NEED_MORE;
        const keyLength = buf[p + 3]!;
        // A parameter's value is an int32_t or a float: 4 bytes.
        const fits = type === MSG.param ? size === 1 + keyLength + 4 : keyLength <= size - 1 && size <= 4096;
        return fits && keyLength >= 3 && isTypeStart(buf[p + 4]!) ? STRONG : weak;
      }
      case MSG.infoMulti:
      case MSG.paramDefault: {
        if (size < 4) return BAD;
        if (avail < 6) return NEED_MORE;
        const flags = buf[p + 3]!; // is_continued (M), default_types (Q)
        const keyLength = buf[p + 4]!;
        const fits =
          type === MSG.infoMulti ? flags <= 1 && keyLength <= size - 2 && size <= 4096 : flags <= 3 && size === 2 + keyLength + 4;
        return fits && keyLength >= 3 && isTypeStart(buf[p + 5]!) ? STRONG : weak;
      }
      case MSG.flagBits:
        return here === FILE_HEADER_BYTES && size >= 40 ? STRONG : weak;
      default:
        // A message type this reader does not know: a newer logger's (skip it) or corruption.
        return weak;
    }
  }

  /**
   * Reads one whole message (payload buf[p, p + size), at file offset `here`) and calls the sink.
   * Returns why it could not be read, having called nothing, or undefined when read.
   */
  #handle(type: number, buf: Uint8Array, p: number, size: number, here: number): string | undefined {
    switch (type) {
      case MSG.data:
        return this.#handleData(buf, p, size);
      case MSG.format:
        return this.#handleFormat(buf, p, size);
      case MSG.info:
      case MSG.infoMulti:
      case MSG.param:
        return this.#handleKeyValue(type, buf, p, size);
      case MSG.paramDefault:
        // Default parameter values (what a parameter would be after a reset): not imported.
        if (size < 2 || buf[p + 1]! > size - 2) return "malformed 'Q' message";
        this.#flushSkip();
        return undefined;
      case MSG.addLogged:
        return this.#handleAddLogged(buf, p, size);
      case MSG.removeLogged: {
        if (size < 1) return "malformed 'R' message";
        this.#flushSkip();
        this.#inData = true;
        this.#topicsById[size >= 2 ? buf[p]! | (buf[p + 1]! << 8) : buf[p]!] = undefined;
        return undefined;
      }
      case MSG.logging:
      case MSG.loggingTagged: {
        const tagged = type === MSG.loggingTagged;
        const textStart = tagged ? 11 : 9;
        if (size < textStart) return `malformed '${tagged ? 'C' : 'L'}' message`;
        this.#flushSkip();
        this.#inData = true;
        const view = this.#viewOf(buf);
        const level = logLevel(buf[p]!);
        const timestamp = readU64(view, p + (tagged ? 3 : 1));
        const text = utf8.decode(buf.subarray(p + textStart, p + size));
        if (tagged) this.#sink.text(timestamp, level, text, 'ulog.logging', { tag: view.getUint16(p + 1, true) });
        else this.#sink.text(timestamp, level, text, 'ulog.logging');
        return undefined;
      }
      case MSG.sync:
        if (size !== SYNC_MAGIC.length || !SYNC_MAGIC.every((b, i) => buf[p + i] === b)) return "malformed 'S' message";
        this.#flushSkip();
        return undefined;
      case MSG.dropout:
        if (size < 2) return "malformed 'O' message";
        this.#flushSkip();
        this.#inData = true;
        this.dropouts += 1;
        this.dropoutMs += buf[p]! | (buf[p + 1]! << 8);
        return undefined;
      case MSG.flagBits:
        return this.#handleFlagBits(buf, p, size, here);
      default:
        return `unknown message type ${typeName(type)}`;
    }
  }

  #handleFlagBits(buf: Uint8Array, p: number, size: number, here: number): string | undefined {
    if (here !== FILE_HEADER_BYTES) return "flag bits ('B') message that is not the file's first";
    if (size < 40) return "malformed 'B' message";
    // incompat_flags[0] bit 0 is "data appended"; any other bit means a layout this reader cannot read,
    // and the spec says a reader must then refuse the file.
    const incompat = buf.subarray(p + 8, p + 16);
    if ((incompat[0]! & ~1) !== 0 || incompat.subarray(1).some((b) => b !== 0)) {
      throw new NotThisFormatError(`ULog with unknown incompatible flags ${hex(incompat)}: cannot be read`);
    }
    if ((incompat[0]! & 1) !== 0) {
      const view = this.#viewOf(buf);
      for (let i = 0; i < 3; i++) {
        const offset = readU64(view, p + 16 + 8 * i);
        if (offset > here) this.#appendedOffsets.push(offset);
      }
      this.#appendedOffsets.sort((a, b) => a - b);
    }
    return undefined;
  }

  #handleFormat(buf: Uint8Array, p: number, size: number): string | undefined {
    const definition = parseMessageDefinition(utf8.decode(buf.subarray(p, p + size)));
    if (definition === undefined) return "malformed format ('F') message";
    for (const field of definition.fields) {
      if (!field.isComplex && BASIC[field.type] === undefined) return `format ${definition.name}: unknown type ${field.type}`;
    }
    this.#flushSkip();
    this.#formats.set(definition.name, definition);
    return undefined;
  }

  /** 'I', 'M' and 'P': a typed key ("int32_t SYS_AUTOSTART", "char[5] sys_name") and its value. */
  #handleKeyValue(type: number, buf: Uint8Array, p: number, size: number): string | undefined {
    const multi = type === MSG.infoMulti;
    const keyAt = multi ? p + 1 : p;
    const keyLength = buf[keyAt];
    if (keyLength === undefined || keyLength > p + size - keyAt - 1) return `malformed ${typeName(type)} message`;
    const field = parseKey(utf8.decode(buf.subarray(keyAt + 1, keyAt + 1 + keyLength)));
    const basic = field === undefined ? undefined : BASIC[field.type];
    if (field === undefined || basic === undefined) return `${typeName(type)} message with an unreadable key`;
    const valueAt = keyAt + 1 + keyLength;
    const valueLength = p + size - valueAt;
    const isText = field.type === 'char' && field.arrayLength !== undefined;
    if (!isText && valueLength < basic.size * (field.arrayLength ?? 1)) return `${typeName(type)} ${field.name}: value too short`;
    const view = new DataView(buf.buffer, buf.byteOffset + valueAt, valueLength);

    if (type === MSG.param) {
      if (field.arrayLength !== undefined || field.isComplex) return `parameter ${field.name}: not a number`;
      const value = parseBasicFieldValue(field, view);
      this.#flushSkip();
      this.#sink.param(this.#inData ? this.#lastTimestamp : null, field.name, toNumber(value));
      return undefined;
    }
    this.#flushSkip();
    if (multi) {
      this.#multiInfoPiece(field, view, buf[p] !== 0);
      return undefined;
    }
    if (field.arrayLength !== undefined && !isText) return undefined; // raw byte arrays: not reported
    const value = parseBasicFieldValue(field, view);
    this.#sink.info(field.name, typeof value === 'string' ? value : infoNumber(value));
    return undefined;
  }

  #multiInfoPiece(field: Field, view: DataView, continued: boolean): void {
    const key = field.name;
    const isText = field.type === 'char' && field.arrayLength !== undefined;
    if (!isText) {
      if (key === 'metadata_events' && field.type === 'uint8_t') this.#eventMetadataPiece(view, continued);
      return; // other binary multi-info: not reported
    }
    const piece = parseBasicFieldValue(field, view) as string;
    if (this.#multiInfoChars + piece.length > MAX_MULTI_INFO_CHARS) return;
    this.#multiInfoChars += piece.length;
    let entries = this.#multiInfo.get(key);
    if (entries === undefined) this.#multiInfo.set(key, (entries = []));
    if (continued && entries.length > 0) entries[entries.length - 1] += piece;
    else entries.push(piece);
  }

  #eventMetadataPiece(view: DataView, continued: boolean): void {
    if (!continued && this.#eventMetadata.length > 0) this.#eventMetadataOpen = false;
    if (!this.#eventMetadataOpen || this.#eventMetadataBytes + view.byteLength > MAX_EVENT_METADATA_BYTES) return;
    this.#eventMetadata.push(new Uint8Array(view.buffer, view.byteOffset, view.byteLength).slice());
    this.#eventMetadataBytes += view.byteLength;
  }

  #handleAddLogged(buf: Uint8Array, p: number, size: number): string | undefined {
    if (size < 4) return "malformed 'A' message";
    const multiId = buf[p]!;
    const msgId = buf[p + 1]! | (buf[p + 2]! << 8);
    const name = utf8.decode(buf.subarray(p + 3, p + size));
    const compiled = compileTopic(name, multiId, this.#formats);
    if (typeof compiled === 'string') return compiled;
    this.#flushSkip();
    this.#inData = true;
    this.#topicsById[msgId] = compiled;
    return undefined;
  }

  #handleData(buf: Uint8Array, p: number, size: number): string | undefined {
    if (size < 2) return "malformed 'D' message";
    const msgId = buf[p]! | (buf[p + 1]! << 8);
    const topic = this.#topicsById[msgId];
    if (topic === undefined) return `data for msg_id ${msgId}, which no subscription announced`;
    const length = size - 2;
    if (length < topic.minSize || length > topic.maxSize) {
      return `data for ${topic.name} of ${length} bytes, not ${topic.minSize}..${topic.maxSize}`;
    }
    this.#flushSkip();
    this.#data(topic, buf, p + 2);
    return undefined;
  }

  /** Decodes a data payload at buf[p] with the topic's compiled leaves and hands it to the sink. */
  #data(topic: Topic, buf: Uint8Array, p: number): void {
    const view = this.#viewOf(buf);
    if (this.#clockOnly && topic.special === undefined) {
      if (topic.timestampOffset >= 0) {
        const timestamp = readU64(view, p + topic.timestampOffset);
        if (timestamp > this.#lastTimestamp) this.#lastTimestamp = timestamp;
        this.#sink.data(-1, timestamp, NO_VALUES);
      } else this.#sink.data(-1, this.#lastTimestamp, NO_VALUES);
      return;
    }
    const { kinds, offsets, lengths, values } = topic;
    for (let i = 0; i < kinds.length; i++) {
      const o = p + offsets[i]!;
      switch (kinds[i]) {
        case K.float:
          values[i] = view.getFloat32(o, true);
          break;
        case K.double:
          values[i] = view.getFloat64(o, true);
          break;
        case K.uint8:
          values[i] = buf[o]!;
          break;
        case K.bool:
          values[i] = buf[o] === 0 ? 0 : 1;
          break;
        case K.int8:
          values[i] = view.getInt8(o);
          break;
        case K.int16:
          values[i] = view.getInt16(o, true);
          break;
        case K.uint16:
          values[i] = view.getUint16(o, true);
          break;
        case K.int32:
          values[i] = view.getInt32(o, true);
          break;
        case K.uint32:
          values[i] = view.getUint32(o, true);
          break;
        case K.int64:
          values[i] = view.getBigInt64(o, true);
          break;
        case K.uint64:
          values[i] = view.getBigUint64(o, true);
          break;
        default:
          values[i] = readText(buf, o, lengths[i]!);
      }
    }
    let timestamp = this.#lastTimestamp;
    if (topic.timestampOffset >= 0) {
      timestamp = readU64(view, p + topic.timestampOffset);
      if (timestamp > this.#lastTimestamp) this.#lastTimestamp = timestamp;
    }
    if (topic.typeId < 0) topic.typeId = this.#announce(topic);
    this.#sink.data(topic.typeId, timestamp, values);
    if (topic.special !== undefined) this.#special(topic.special, timestamp, values);
  }

  #special(special: Special, timestamp: number, values: readonly LogValue[]): void {
    if (special.kind === 'gps') {
      const utc = values[special.timeUtc] as bigint;
      if (utc > 0n && (values[special.fixType] as number) >= 3) this.#sink.clock(timestamp, Number(utc));
      return;
    }
    const level = ((values[special.logLevels] as number) >> 4) & 0xf;
    if (level > 7) return; // protocol / disabled events are not for the log (pyulog skips them too)
    const id = values[special.id] as number;
    const args = special.args.map((i) => values[i] as number);
    this.#sink.text(timestamp, level as LogLevel, `event 0x${id.toString(16).padStart(8, '0')}`, 'ulog.event', {
      id,
      sequence: values[special.sequence] as number,
      arguments: args,
    });
  }

  /** A type per (topic, instance); a re-subscription with the same fields keeps its type. */
  #announce(topic: Topic): number {
    const key = `${topic.name}\u0000${topic.multiId}`;
    const signature = topic.fields.map((f) => `${f.name}:${f.type}`).join(';');
    let known = this.#types.get(key);
    if (known === undefined) this.#types.set(key, (known = []));
    const same = known.find((k) => k.signature === signature);
    if (same !== undefined) return same.type.id;
    const type: LogMessageType = { id: this.#nextTypeId++, name: topic.name, instance: topic.multiId, fields: topic.fields };
    known.push({ type, signature });
    this.#sink.type(type);
    return type.id;
  }
}

/**
 * Flattens a subscription's format into leaves (pyulog's names and order), or says why it cannot.
 */
function compileTopic(name: string, multiId: number, formats: ReadonlyMap<string, MessageDefinition>): Topic | string {
  const format = formats.get(name);
  if (format === undefined) return `subscription to ${name}, whose format ('F') the file does not define`;
  const fields: LogField[] = [];
  const kinds: number[] = [];
  const offsets: number[] = [];
  const lengths: number[] = [];
  const sizes = new Map<string, number>();

  const sizeOf = (definition: MessageDefinition, depth: number): number => {
    const known = sizes.get(definition.name);
    if (known !== undefined) return known;
    if (depth > 16) throw new Error(`format ${definition.name} nests too deep (a cycle?)`);
    let total = 0;
    for (const field of definition.fields) total += fieldSize(field, depth) * (field.arrayLength ?? 1);
    sizes.set(definition.name, total);
    return total;
  };
  const fieldSize = (field: Field, depth: number): number => {
    const basic = BASIC[field.type];
    if (basic !== undefined) return basic.size;
    const nested = formats.get(field.type);
    if (nested === undefined) throw new Error(`format ${field.type} is not defined`);
    return sizeOf(nested, depth + 1);
  };

  let timestampOffset = -1;
  let minSize = 0;
  const walk = (definition: MessageDefinition, prefix: string, base: number, depth: number): number => {
    let offset = base;
    for (const field of definition.fields) {
      const elementSize = fieldSize(field, depth);
      const count = field.arrayLength ?? 1;
      const padding = field.name.startsWith('_padding');
      if (depth === 0 && !padding) minSize = offset - base + elementSize * count;
      if (padding) {
        // skipped, bytes counted
      } else if (depth === 0 && field.name === 'timestamp' && field.type === 'uint64_t' && field.arrayLength === undefined) {
        timestampOffset = offset;
      } else if (field.isComplex) {
        const nested = formats.get(field.type)!;
        if (field.arrayLength === undefined) walk(nested, `${prefix}${field.name}.`, offset, depth + 1);
        else for (let i = 0; i < count; i++) walk(nested, `${prefix}${field.name}[${i}].`, offset + i * elementSize, depth + 1);
      } else {
        const basic = BASIC[field.type]!;
        if (basic.kind === K.text) {
          fields.push({ name: prefix + field.name, type: 'text' });
          kinds.push(K.text);
          offsets.push(offset);
          lengths.push(count);
        } else if (field.arrayLength === undefined) {
          fields.push({ name: prefix + field.name, type: basic.column });
          kinds.push(basic.kind);
          offsets.push(offset);
          lengths.push(0);
        } else {
          for (let i = 0; i < count; i++) {
            fields.push({ name: `${prefix}${field.name}[${i}]`, type: basic.column });
            kinds.push(basic.kind);
            offsets.push(offset + i * basic.size);
            lengths.push(0);
          }
        }
      }
      offset += elementSize * count;
    }
    return offset - base;
  };

  let maxSize: number;
  try {
    maxSize = walk(format, '', 0, 0);
  } catch (error) {
    return `subscription to ${name}: ${(error as Error).message}`;
  }
  const topic: Topic = {
    name,
    multiId,
    fields,
    kinds: Uint8Array.from(kinds),
    offsets: Uint32Array.from(offsets),
    lengths: Uint32Array.from(lengths),
    timestampOffset,
    minSize,
    maxSize,
    values: new Array<LogValue>(fields.length).fill(0),
    typeId: -1,
    special: undefined,
  };
  topic.special = specialOf(topic);
  return topic;
}

/** The topics that feed text() (PX4 events) or clock() (GPS time), with their fields' indexes. */
function specialOf(topic: Topic): Special | undefined {
  const index = (name: string) => topic.fields.findIndex((f) => f.name === name);
  if (topic.name === 'event') {
    const id = index('id');
    const sequence = index('event_sequence');
    const logLevels = index('log_levels');
    const args: number[] = [];
    for (let i = index('arguments[0]'); i >= 0 && topic.fields[i]?.name === `arguments[${args.length}]`; i++) args.push(i);
    if (id < 0 || sequence < 0 || logLevels < 0) return undefined;
    return { kind: 'event', id, sequence, logLevels, args };
  }
  if ((topic.name === 'vehicle_gps_position' || topic.name === 'sensor_gps') && topic.multiId === 0) {
    const timeUtc = index('time_utc_usec');
    const fixType = index('fix_type');
    if (timeUtc < 0 || fixType < 0 || topic.fields[timeUtc]!.type !== 'uint64') return undefined;
    return { kind: 'gps', timeUtc, fixType };
  }
  return undefined;
}

/** A µs timestamp as a number: exact below 2^53 µs (285 years), read without a bigint. */
function readU64(view: DataView, offset: number): number {
  return view.getUint32(offset + 4, true) * 4294967296 + view.getUint32(offset, true);
}

/** A char[N] field: the bytes up to the first NUL, as UTF-8. */
function readText(buf: Uint8Array, offset: number, length: number): string {
  let end = offset;
  const limit = offset + length;
  let ascii = true;
  while (end < limit && buf[end] !== 0) {
    if (buf[end]! >= 0x80) ascii = false;
    end++;
  }
  if (end === offset) return '';
  if (ascii && end - offset <= 64) return String.fromCharCode(...buf.subarray(offset, end));
  return utf8.decode(buf.subarray(offset, end));
}

/** The level of an 'L'/'C' message: PX4 writes the ASCII digit '0'..'7'; a raw 0..7 is accepted too. */
function logLevel(byte: number): LogLevel {
  if (byte >= 0x30 && byte <= 0x37) return (byte - 0x30) as LogLevel;
  if (byte <= 7) return byte as LogLevel;
  return 6; // not a syslog level: shown as info rather than dropped
}

function toNumber(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return Number(value);
  if (typeof value === 'boolean') return value ? 1 : 0;
  return Number.NaN;
}

function infoNumber(value: unknown): string | number {
  if (typeof value === 'bigint') return value.toString();
  return toNumber(value);
}

/**
 * An info or parameter key, e.g. "int32_t SYS_AUTOSTART". The library refuses an array of length 0, but
 * PX4 writes "char[0] perf_top_preflight" for an empty multi-info piece (pyulog reads it as ""), so that
 * case is an empty char array here.
 */
function parseKey(text: string): Field | undefined {
  const field = parseFieldDefinition(text);
  if (field !== undefined) return field;
  const empty = /^char\[0\] (\S+)$/.exec(text);
  return empty === null ? undefined : { type: 'char', name: empty[1]!, arrayLength: 0, isComplex: false };
}

function isNameStart(byte: number): boolean {
  return (byte >= 0x61 && byte <= 0x7a) || (byte >= 0x41 && byte <= 0x5a) || byte === 0x5f;
}

/** First letter of a ULog type name: bool, char, double, float, int…, uint…. */
function isTypeStart(byte: number): boolean {
  return byte === 0x62 || byte === 0x63 || byte === 0x64 || byte === 0x66 || byte === 0x69 || byte === 0x75;
}

function typeName(type: number): string {
  return type >= 0x21 && type <= 0x7e ? `'${String.fromCharCode(type)}'` : `0x${type.toString(16).padStart(2, '0')}`;
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}
