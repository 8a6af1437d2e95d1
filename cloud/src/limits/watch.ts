import { isWideLimitSignal, SIGNAL_NAME_PREFIX } from '@sortie/contracts';
import type { AppContext } from '../platform/context.ts';
import type { CommittedSamples, LimitWatch, WatchedDataset } from '../platform/limit-watch.ts';
import type { OutboxJob } from '../platform/outbox.ts';
import { notifyLimitEvents } from './notify.ts';
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

/**
 * Batches of one dataset handed over and not yet evaluated and stored, beyond which ingest waits for the
 * oldest: limits never hold up a write while they keep up, and never fall behind without bound.
 */
export const MAX_WAITING_BATCHES = 4;

interface WatchedRule extends StoredRule {
  bound: LimitBound;
  label: string;
}

interface Entry {
  organizationId: string;
  /** Undefined until read (or after a failed evaluation); re-read when older than RULES_TTL_MS. */
  rules: WatchedRule[] | undefined;
  /**
   * The signals the rules read last watch: what a batch's samples are copied of when it is handed over.
   * Undefined until read, and when the rules changed through this replica: the next batch then waits for
   * the read, so a rule made here sees the very next batch.
   */
  signals: string[] | undefined;
  loadedAt: number;
  /** A read of the rules queued by a batch that had nothing to evaluate (so a dataset without rules still learns of new ones). */
  refreshing: boolean;
  /** The last queued work: a dataset's batches are evaluated one at a time, in the order they committed. */
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
 *
 * Ingest does not wait for that transaction: `committed` copies the samples the rules watch (a batch's
 * arrays are reused once it returns) and queues the evaluation behind the dataset's earlier ones, so
 * a crossing costs a stream nothing while limits keep up; past MAX_WAITING_BATCHES it waits. `settled`
 * says when everything handed over is stored (HTTP append answers after it; shutdown waits for it).
 */
export class LimitWatcher implements LimitWatch {
  readonly #ctx: AppContext;
  readonly #entries = new Map<string, Entry>();
  #sweptAt = 0;

  constructor(ctx: AppContext) {
    this.#ctx = ctx;
  }

  async committed(dataset: WatchedDataset, samples: CommittedSamples): Promise<void> {
    const now = performance.now();
    let entry = this.#entries.get(dataset.id);
    if (!entry) {
      entry = {
        organizationId: dataset.organizationId,
        rules: undefined,
        signals: undefined,
        loadedAt: -Infinity,
        refreshing: false,
        tail: Promise.resolve(),
        pending: 0,
        usedAt: now,
      };
      this.#entries.set(dataset.id, entry);
    }
    entry.usedAt = now;
    if (now - this.#sweptAt > IDLE_MS) this.#sweep(now);
    const watched = entry;
    if (watched.signals === undefined) await this.#enqueue(watched, dataset.id, () => this.#load(watched, dataset));
    const copied = copySamples(watched.signals ?? [], samples);
    if (copied.size === 0) {
      // Nothing a rule watches: no evaluation, but the rules are read again now and then.
      if (performance.now() - watched.loadedAt >= RULES_TTL_MS && !watched.refreshing) {
        watched.refreshing = true;
        void this.#enqueue(watched, dataset.id, () => this.#load(watched, dataset)).finally(() => (watched.refreshing = false));
      }
      return;
    }
    const evaluated = this.#enqueue(watched, dataset.id, () => this.#evaluate(watched, dataset, copied));
    if (watched.pending > MAX_WAITING_BATCHES) await evaluated;
  }

  rulesChanged(organizationId: string): void {
    for (const entry of this.#entries.values()) {
      if (entry.organizationId !== organizationId) continue;
      entry.loadedAt = -Infinity;
      entry.signals = undefined;
    }
  }

  settled(datasetId?: string): Promise<void> {
    if (datasetId !== undefined) return this.#entries.get(datasetId)?.tail ?? Promise.resolve();
    return Promise.all([...this.#entries.values()].map((e) => e.tail)).then(() => undefined);
  }

  /** Queue `work` behind the dataset's earlier work; a failure is logged and leaves the rules to be read again. */
  #enqueue(entry: Entry, datasetId: string, work: () => Promise<void>): Promise<void> {
    entry.pending++;
    const run = entry.tail
      .then(work)
      .catch((err) => {
        // The batch is stored regardless; the states held here may now be ahead of the database's: drop them.
        entry.rules = undefined;
        this.#ctx.logger.warn({ err, datasetId }, 'limit evaluation failed; the rules and states are read again for the next batch');
      })
      .finally(() => {
        entry.pending--;
      });
    entry.tail = run;
    return run;
  }

  async #evaluate(entry: Entry, dataset: WatchedDataset, samples: CommittedSamples): Promise<void> {
    if (!entry.rules || performance.now() - entry.loadedAt >= RULES_TTL_MS) await this.#load(entry, dataset);
    for (let attempt = 1; ; attempt++) {
      const changes = run(entry.rules!, samples);
      if (changes.length === 0) return;
      try {
        let jobs: OutboxJob[] = [];
        const stored = await persistChanges(this.#ctx.db, dataset, changes, async (tx, events) => {
          jobs = await notifyLimitEvents(tx, this.#ctx.outbox, dataset.organizationId, events);
        });
        for (const rule of entry.rules!) rule.version = stored.versions.get(rule.rule.id) ?? rule.version;
        // Followers read the dataset's new and ended LIMIT events (Follow, the console's banner and bands);
        // endpoints that opted in get them as webhooks.
        if (stored.events.length > 0 || stored.worsened > 0) this.#ctx.live.committed(dataset.id, 'events');
        if (jobs.length > 0) this.#ctx.outbox.committed(jobs);
        return;
      } catch (error) {
        if (!(error instanceof StaleLimitState) || attempt >= ATTEMPTS) throw error;
        // A rule was edited or another replica moved a state: drop what this batch did to the states held
        // here, read them again and evaluate the batch on those (its samples were copied).
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
    entry.signals = [...new Set(entry.rules.map((r) => r.rule.signal))];
    entry.loadedAt = performance.now();
  }

  #sweep(now: number): void {
    this.#sweptAt = now;
    for (const [id, entry] of this.#entries) if (entry.pending === 0 && now - entry.usedAt > IDLE_MS) this.#entries.delete(id);
  }
}

/**
 * The samples of `signals` in a batch, copied (as time, value pairs) so the batch's arrays can be reused
 * before the evaluation runs. A few doubles per watched sample; nothing for a batch the rules do not watch.
 */
function copySamples(signals: readonly string[], samples: CommittedSamples): CommittedSamples & { size: number } {
  const copied = new Map<string, number[]>();
  for (const signal of signals) {
    const pairs: number[] = [];
    samples.forEach(signal, (timeUs, value) => void pairs.push(timeUs, value));
    if (pairs.length > 0) copied.set(signal, pairs);
  }
  return {
    size: copied.size,
    forEach(signal, visit) {
      const pairs = copied.get(signal);
      if (pairs) for (let i = 0; i < pairs.length; i += 2) visit(pairs[i]!, pairs[i + 1]!);
    },
  };
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
