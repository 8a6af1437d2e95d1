// Push-to-pull adapter for live sources: the port or socket pushes chunks as they arrive, the pipeline
// pulls them with for-await. A live link cannot be paused, so past `maxBytes` queued (the pipeline is
// stalled, e.g. on a slow disk) new chunks are dropped and counted rather than growing memory.
import type { SourceChunk } from './source.ts';

export class ChunkQueue {
  readonly #maxBytes: number;
  #items: SourceChunk[] = [];
  #head = 0;
  #bytes = 0;
  #droppedBytes = 0;
  #ended = false;
  #error: Error | null = null;
  #wake: (() => void) | null = null;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  /** False when the chunk was dropped (queue full or ended). */
  push(chunk: SourceChunk): boolean {
    if (this.#ended) return false;
    if (this.#bytes + chunk.bytes.length > this.#maxBytes) {
      this.#droppedBytes += chunk.bytes.length;
      return false;
    }
    this.#items.push(chunk);
    this.#bytes += chunk.bytes.length;
    this.#signal();
    return true;
  }

  /** Ends the stream after the queued chunks; with an error, the iterator throws it after them. */
  end(error?: Error): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#error = error ?? null;
    this.#signal();
  }

  get droppedBytes(): number {
    return this.#droppedBytes;
  }

  /** Receive time of the oldest chunk not yet pulled. */
  oldestReceivedAtUs(): number | undefined {
    return this.#items[this.#head]?.receivedAtUs;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<SourceChunk, void, undefined> {
    for (;;) {
      if (this.#head < this.#items.length) {
        const chunk = this.#items[this.#head]!;
        this.#items[this.#head++] = undefined as unknown as SourceChunk;
        this.#bytes -= chunk.bytes.length;
        if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
          this.#items = this.#items.slice(this.#head);
          this.#head = 0;
        }
        yield chunk;
        continue;
      }
      if (this.#ended) {
        if (this.#error) throw this.#error;
        return;
      }
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
    }
  }

  #signal(): void {
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }
}
