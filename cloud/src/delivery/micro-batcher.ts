/**
 * Turns many concurrent single-item calls into few multi-item calls: while one batch is running, new
 * items wait and go together in the next. Idle, an item waits only for the current turn of the event
 * loop (setImmediate), so light load keeps its latency and heavy load gets bigger batches: the database
 * does one statement for many deliveries instead of one each.
 */
export class MicroBatcher<I, O> {
  readonly #run: (items: I[]) => Promise<O[]>;
  readonly #maxBatch: number;
  #waiting: Array<{ item: I; resolve: (o: O) => void; reject: (e: unknown) => void }> = [];
  #running = false;
  #scheduled = false;

  constructor(run: (items: I[]) => Promise<O[]>, options: { maxBatch: number }) {
    this.#run = run;
    this.#maxBatch = options.maxBatch;
  }

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.#waiting.push({ item, resolve, reject });
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#running || this.#scheduled || this.#waiting.length === 0) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      void this.#flush();
    });
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
