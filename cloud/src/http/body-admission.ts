import { createMiddleware } from 'hono/factory';
import { ServiceError } from '../platform/errors.ts';

/**
 * A budget of request-body bytes the process handles at once. A parsed JSON body takes several times its
 * size in memory, so without a bound many large bodies arriving together add up to any amount of memory;
 * with it, a request whose body would take the total past the budget waits (its bytes stay unread in the
 * socket, where TCP flow control slows the sender) until enough earlier bodies are done. First come, first
 * served, so a large body is not overtaken for ever by small ones.
 */
export class BodyBudget {
  readonly limit: number;
  #inUse = 0;
  readonly #waiting: Array<{ bytes: number; admit: () => void }> = [];

  constructor(limit: number) {
    this.limit = limit;
  }

  get inUse(): number {
    return this.#inUse;
  }

  /** Resolves with the release once `bytes` (at most the limit) fit; rejects if `signal` aborts first. */
  async acquire(bytes: number, signal?: AbortSignal): Promise<() => void> {
    const size = Math.min(bytes, this.limit);
    if (this.#waiting.length === 0 && this.#inUse + size <= this.limit) {
      this.#inUse += size;
      return this.#releaser(size);
    }
    await new Promise<void>((resolve, reject) => {
      const entry = {
        bytes: size,
        admit: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        const i = this.#waiting.indexOf(entry);
        if (i >= 0) this.#waiting.splice(i, 1);
        this.#admitWaiting();
        reject(signal!.reason);
      };
      if (signal?.aborted) return reject(signal.reason);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiting.push(entry);
    });
    return this.#releaser(size);
  }

  #releaser(size: number): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#inUse -= size;
      this.#admitWaiting();
    };
  }

  #admitWaiting(): void {
    while (this.#waiting.length > 0 && this.#inUse + this.#waiting[0]!.bytes <= this.limit) {
      const next = this.#waiting.shift()!;
      this.#inUse += next.bytes;
      next.admit();
    }
  }
}

/**
 * Holds a request with a body until its bytes fit the budget, and gives them back once its answer is
 * made. The size is Content-Length, or the body limit for a chunked body (it may be that large). Requests
 * without a body pass at once.
 */
export function bodyAdmission(budget: BodyBudget, bodyLimit: number) {
  return createMiddleware(async (c, next) => {
    const length = c.req.header('content-length');
    const chunked = c.req.header('transfer-encoding') !== undefined;
    const bytes = length !== undefined && /^\d+$/.test(length) ? Number(length) : chunked ? bodyLimit : 0;
    if (bytes === 0) return next();
    let release: () => void;
    try {
      release = await budget.acquire(bytes, c.req.raw.signal);
    } catch {
      // The client went away while its request waited: nobody reads this answer, and it is no fault.
      throw new ServiceError('request_timeout', 'the client closed the connection while the request waited for its turn');
    }
    try {
      await next();
    } finally {
      release();
    }
  });
}
