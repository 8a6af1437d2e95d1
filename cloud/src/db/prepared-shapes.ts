import { createHash } from 'node:crypto';

/**
 * Which statement shapes of a writer run as named prepared statements: the MAVLink writer's (decision
 * 0006) and the wide writer's one-statement appends (decision 0004). Their texts depend on the dataset
 * (its tables, its columns), so they cannot have one fixed name as `runHot`'s other statements do.
 *
 * A shape is prepared the second time it is seen, so a one-off (a dataset's table set that grew)
 * keeps no plan on a connection. PostgreSQL keeps a prepared statement's plan on every connection that
 * ran it until the connection closes (1.85 MB for a dataset of 37 tables), so at most `max` shapes are
 * named at once. A named shape unused for longer than a pooled connection lives (`lifetimeMs`, the
 * pool's maxLifetimeSeconds) is dropped when room is needed: every connection that prepared it has been
 * replaced since, so no plan of it is left, and the flights of a long-running server do not use up the
 * room for good. The name is its text's hash, so a name always means one text (node-postgres's rule),
 * and a shape named again gets the same name.
 */
export class PreparedShapes {
  readonly #max: number;
  readonly #lifetimeMs: number;
  readonly #now: () => number;
  readonly #seen = new Map<string, number>();
  readonly #named = new Map<string, { name: string; usedAt: number }>();

  readonly #prefix: string;

  /** `prefix` starts every name (one per writer, so two writers never share a name). */
  constructor(options: { prefix: string; max: number; lifetimeMs: number; now?: () => number }) {
    this.#prefix = options.prefix;
    this.#max = options.max;
    this.#lifetimeMs = options.lifetimeMs;
    this.#now = options.now ?? (() => performance.now());
  }

  /** One run of `shape` (statement `text`): its name when it runs prepared, undefined when unnamed. */
  use(shape: string, text: string): string | undefined {
    const now = this.#now();
    const named = this.#named.get(shape);
    if (named) {
      named.usedAt = now;
      return named.name;
    }
    const seen = (this.#seen.get(shape) ?? 0) + 1;
    // Counts of shapes seen once are forgotten in bulk: a cap on memory, at worst a shape waits longer.
    if (this.#seen.size >= 10 * this.#max) this.#seen.clear();
    this.#seen.set(shape, seen);
    if (seen < 2 || !this.#room(now)) return undefined;
    this.#seen.delete(shape);
    const name = `${this.#prefix}${createHash('sha256').update(text).digest('hex').slice(0, 32)}`;
    this.#named.set(shape, { name, usedAt: now });
    return name;
  }

  /** Named shapes now. */
  get size(): number {
    return this.#named.size;
  }

  #room(now: number): boolean {
    if (this.#named.size < this.#max) return true;
    for (const [shape, { usedAt }] of this.#named) if (now - usedAt > this.#lifetimeMs) this.#named.delete(shape);
    return this.#named.size < this.#max;
  }
}
