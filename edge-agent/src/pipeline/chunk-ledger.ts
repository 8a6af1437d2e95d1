// Which chunk each framed byte came from. A frame can span chunks, and the framer may hold a frame
// back for lookahead (unknown message ids) until a later chunk arrives; the frame still gets the
// receive time of the chunk that carried its last byte, and, in a replay, the file offset right
// after it (where a resumed replay must start so that this frame is neither lost nor repeated).

interface Entry {
  /** Range of the chunk in the framer's input ("pipe" offsets: bytes pushed to this framer). */
  readonly pipeStart: number;
  readonly pipeEnd: number;
  readonly receivedAtUs: number;
  /** File range of the chunk, when it came from a replay. */
  readonly srcStart: number;
  readonly srcEnd: number;
}

export interface FrameOrigin {
  readonly receivedAtUs: number;
  /** File offset to resume after this frame, or null when the chunk had no file position. */
  readonly sourcePosition: number | null;
}

export class ChunkLedger {
  #entries: Entry[] = [];
  #head = 0;
  #pushed = 0;

  /** Records the next chunk pushed to the framer. */
  add(length: number, receivedAtUs: number, position?: { start: number; end: number }): void {
    const pipeStart = this.#pushed;
    this.#pushed += length;
    this.#entries.push({
      pipeStart,
      pipeEnd: this.#pushed,
      receivedAtUs,
      srcStart: position?.start ?? -1,
      srcEnd: position?.end ?? -1,
    });
  }

  /**
   * Where the frame whose last byte is at pipe offset `pipeEnd - 1` came from. Calls must come in
   * non-decreasing `pipeEnd` order (frames come out of a framer in input order).
   */
  locate(pipeEnd: number): FrameOrigin {
    this.#dropBefore(pipeEnd);
    const e = this.#entries[this.#head];
    if (!e || pipeEnd <= e.pipeStart) throw new RangeError(`no chunk holds pipe offset ${pipeEnd - 1}`);
    return { receivedAtUs: e.receivedAtUs, sourcePosition: sourcePositionIn(e, pipeEnd) };
  }

  /** Forgets chunks wholly consumed by the framer (framed or discarded up to `consumed`). */
  release(consumed: number): void {
    this.#dropBefore(consumed + 1);
  }

  get size(): number {
    return this.#entries.length - this.#head;
  }

  #dropBefore(pipeEnd: number): void {
    while (this.#head < this.#entries.length && this.#entries[this.#head]!.pipeEnd < pipeEnd) this.#head++;
    if (this.#head > 256 && this.#head * 2 > this.#entries.length) {
      this.#entries = this.#entries.slice(this.#head);
      this.#head = 0;
    }
  }
}

function sourcePositionIn(e: Entry, pipeEnd: number): number | null {
  if (e.srcEnd < 0) return null;
  if (pipeEnd === e.pipeEnd) return e.srcEnd;
  // A raw capture maps byte for byte. A tlog chunk is one record (timestamp + frame) and is framed
  // whole, so a frame ending inside one cannot happen with valid records; should it ever, resuming
  // at the record start repeats at most that record rather than skipping anything.
  const linear = e.srcEnd - e.srcStart === e.pipeEnd - e.pipeStart;
  return linear ? e.srcStart + (pipeEnd - e.pipeStart) : e.srcStart;
}
