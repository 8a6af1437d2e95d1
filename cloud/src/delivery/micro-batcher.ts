/**
 * Turns many concurrent single-item calls into few multi-item calls: while one batch is running, new
 * items wait and go together in the next. Idle, an item waits only for the current turn of the event
 * loop (setImmediate), so light load keeps its latency and heavy load gets bigger batches: the database
 * does one statement for many deliveries instead of one each. `lingerMs` makes an idle batcher wait
 * that long for company instead: for work nobody waits on (marking jobs published), where one
 * statement a few times a second beats one per item.
 */
export class MicroBatcher<I, O> {
  readonly #run: (items: I[]) => Promise<O[]>;
  readonly #maxBatch: number;
  readonly #lingerMs: number;
  #waiting: Array<{ item: I; resolve: (o: O) => void; reject: (e: unknown) => void }> = [];
  #running = false;
  #scheduled = false;
  #linger: ReturnType<typeof setTimeout> | undefined;

  constructor(run: (items: I[]) => Promise<O[]>, options: { maxBatch: number; lingerMs?: number }) {
    this.#run = run;
    this.#maxBatch = options.maxBatch;
    this.#lingerMs = options.lingerMs ?? 0;
  }

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.#waiting.push({ item, resolve, reject });
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#running || this.#waiting.length === 0) return;
    if (this.#scheduled) {
      // Lingering, and the batch just filled up: go now.
      if (this.#linger && this.#waiting.length >= this.#maxBatch) {
        clearTimeout(this.#linger);
        this.#linger = undefined;
        setImmediate(() => this.#go());
      }
      return;
    }
    this.#scheduled = true;
    if (this.#lingerMs > 0 && this.#waiting.length < this.#maxBatch) this.#linger = setTimeout(() => this.#go(), this.#lingerMs);
    else setImmediate(() => this.#go());
  }

  #go(): void {
    this.#scheduled = false;
    this.#linger = undefined;
    void this.#flush();
  }

  async #flush(): Promise<void> {
    if (this.#running || this.#waiting.length === 0) return;
    this.#running = true;
    const batch = this.#waiting.splice(0, this.#maxBatch);
    try {
      const results = await this.#run(batch.map((b) => b.item));
      if (results.length !== batch.length) throw new Error(`batch returned ${results.length} results for ${batch.length} items`);
      batch.forEach((b, i) => b.resolve(results[i]!));
    } catch (error) {
      for (const b of batch) b.reject(error);
    } finally {
      this.#running = false;
      this.#schedule();
    }
  }
}
