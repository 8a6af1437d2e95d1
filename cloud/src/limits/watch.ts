import { isWideLimitSignal, SIGNAL_NAME_PREFIX } from '@sortie/contracts';
import type { AppContext } from '../platform/context.ts';
import type { CommittedSamples, LimitWatch, WatchedDataset } from '../platform/limit-watch.ts';
import { boundOf, step, type CrossingState, type LimitBound, type Transition } from './crossing.ts';
import { loadStoredRules, persistChanges, StaleLimitState, wideChannelNames, type RuleChange, type StoredRule } from './states.ts';

/**
 * How old a replica's copy of a dataset's rules and states may be before a batch reads them again: a
 * rule created, changed or deleted on another replica reaches this one's ingest within this long (on
 * this replica at once, rulesChanged). Also bounds how late a state another replica wrote is seen here.
 */
export const RULES_TTL_MS = 1000;

/** A dataset no batch reached for this long is forgotten (its rules are read again when one does). */
const IDLE_MS = 5 * 60_000;

/** A batch whose write found the state moved is evaluated again on fresh state at most this many times. */
const ATTEMPTS = 3;

interface WatchedRule extends StoredRule {
  bound: LimitBound;
  label: string;
}

interface Entry {
  organizationId: string;
  /** Undefined until read; re-read when older than RULES_TTL_MS. */
  rules: WatchedRule[] | undefined;
  loadedAt: number;
  /** The last batch's evaluation: batches of one dataset are evaluated one at a time, in the order they committed. */
  tail: Promise<void>;
  pending: number;
  usedAt: number;
}

/**
 * Evaluates every limit rule of a dataset on each batch ingest committed (the AppContext's `limits`
 * port). The hot path costs no database round trip: a dataset's rules and their states are kept here
 * for RULES_TTL_MS and a batch that changes no state (the common case: nothing crosses, or a crossing
 * goes on no worse) is evaluated in memory only. A batch that does change one stores the change in one
 * transaction (states.ts) written only from the version read, so replicas and restarts agree.
 */
export class LimitWatcher implements LimitWatch {
  readonly #ctx: AppContext;
  readonly #entries = new Map<string, Entry>();
  #sweptAt = 0;

  constructor(ctx: AppContext) {
    this.#ctx = ctx;
  }

  committed(dataset: WatchedDataset, samples: CommittedSamples): Promise<void> {
    const now = performance.now();
    let entry = this.#entries.get(dataset.id);
    if (!entry) {
      entry = { organizationId: dataset.organizationId, rules: undefined, loadedAt: -Infinity, tail: Promise.resolve(), pending: 0, usedAt: now };
      this.#entries.set(dataset.id, entry);
    }
    entry.usedAt = now;
    entry.pending++;
    const watched = entry;
    const run = watched.tail
      .then(() => this.#evaluate(watched, dataset, samples))
      .catch((err) => {
        // The batch is stored regardless; the states held here may now be ahead of the database's: drop them.
        watched.rules = undefined;
        this.#ctx.logger.warn({ err, datasetId: dataset.id }, 'limit evaluation failed; the rules and states are read again for the next batch');
      })
      .finally(() => {
        watched.pending--;
      });
    watched.tail = run;
    if (now - this.#sweptAt > IDLE_MS) this.#sweep(now);
    return run;
  }

  rulesChanged(organizationId: string): void {
    for (const entry of this.#entries.values()) if (entry.organizationId === organizationId) entry.loadedAt = -Infinity;
  }

  async #evaluate(entry: Entry, dataset: WatchedDataset, samples: CommittedSamples): Promise<void> {
    if (!entry.rules || performance.now() - entry.loadedAt >= RULES_TTL_MS) await this.#load(entry, dataset);
    for (let attempt = 1; ; attempt++) {
      const changes = run(entry.rules!, samples);
      if (changes.length === 0) return;
      try {
        const stored = await persistChanges(this.#ctx.db, dataset, changes);
        for (const rule of entry.rules!) rule.version = stored.versions.get(rule.rule.id) ?? rule.version;
        // Followers read the dataset's new and ended LIMIT events (Follow, the console's banner and bands).
        if (stored.events.length > 0) this.#ctx.live.committed(dataset.id, 'events');
        return;
      } catch (error) {
        if (!(error instanceof StaleLimitState) || attempt >= ATTEMPTS) throw error;
        // A rule was edited or another replica moved a state: drop what this batch did to the states held
        // here, read them again and evaluate the batch on those.
        entry.rules = undefined;
        await this.#load(entry, dataset);
      }
    }
  }

  /**
   * Read the dataset's rules and states. A state nobody wrote since it was read here keeps what it holds
   * here (the same, plus the newest sample seen), which is exact only after a batch was stored: a failed
   * evaluation drops the entry's rules first.
   */
  async #load(entry: Entry, dataset: WatchedDataset): Promise<void> {
    const db = this.#ctx.db;
    const stored = (await loadStoredRules(db, dataset)).filter((r) => isWideLimitSignal(r.rule.signal) === (dataset.shape === 'wide'));
    const names = dataset.shape === 'wide' && stored.length > 0 ? await wideChannelNames(db, dataset.id) : undefined;
    const before = new Map((entry.rules ?? []).map((r) => [r.rule.id, r]));
    entry.rules = stored.map((r) => {
      const known = before.get(r.rule.id);
      const state = known && known.stamp === r.stamp && known.version === r.version ? known.state : r.state;
      return { ...r, state, bound: boundOf(r.rule), label: labelOf(r.rule.signal, names) };
    });
    entry.loadedAt = performance.now();
  }

  #sweep(now: number): void {
    this.#sweptAt = now;
    for (const [id, entry] of this.#entries) if (entry.pending === 0 && now - entry.usedAt > IDLE_MS) this.#entries.delete(id);
  }
}

/** Feed the batch's samples to each rule; the rules whose state changed, with what happened. */
function run(rules: readonly WatchedRule[], samples: CommittedSamples): RuleChange[] {
  const changes: RuleChange[] = [];
  for (const r of rules) {
    const state: CrossingState = r.state;
    const openEventId = state.eventId;
    const transitions: Transition[] = [];
    let changed = false;
    samples.forEach(r.rule.signal, (timeUs, value) => {
      if (step(r.bound, state, timeUs, value, transitions)) changed = true;
    });
    if (changed) changes.push({ rule: r.rule, stamp: r.stamp, label: r.label, expectedVersion: r.version, openEventId, state, transitions });
  }
  return changes;
}

/** How a LIMIT message names the signal: `ATTITUDE.roll`, or a wide channel's name (`ch_3` when it has none). */
export function labelOf(signal: string, wideNames: ReadonlyMap<number, string> | undefined): string {
  if (signal.startsWith(SIGNAL_NAME_PREFIX)) return signal.slice(SIGNAL_NAME_PREFIX.length);
  return wideNames?.get(Number(signal)) ?? `ch_${signal}`;
}
