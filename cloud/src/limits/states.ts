import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../db/connect.ts';
import type { Executor } from '../db/executor.ts';
import type { LimitPhase, LimitRuleRow } from '../db/schema.ts';
import type { WatchedDataset } from '../platform/limit-watch.ts';
import { limitEventData, limitMessage, type CrossingState, type Transition } from './crossing.ts';

/**
 * The SQL of watching: a dataset's rules with where each stands on it (read by the watcher every few
 * seconds at most), and the one transaction that stores what a batch changed (its LIMIT events and the
 * rules' new states). Times cross as integer µs since the epoch.
 */

/** A rule with where it stands on one dataset; `version` null when no state row exists yet. */
export interface StoredRule {
  rule: LimitRuleRow;
  /** The rule row's version as read (its xmin): what a write checks the rule is still as it was. */
  stamp: string;
  state: CrossingState;
  version: number | null;
}

/**
 * Which version of a rule row was read: PostgreSQL's xmin, the transaction that wrote the row, new with
 * every update (updated_at comes from the service's clock and could repeat).
 */
const RULE_STAMP = sql<string>`r.xmin::text`;

/** `timestamptz` of µs since the epoch, exact (integer arithmetic on the interval). */
export function timestampOfUs(us: number): RawBuilder<Date> {
  return sql<Date>`(timestamptz 'epoch' + ${Math.round(us)}::int8 * interval '1 microsecond')`;
}

/** The rules that watch `dataset` (its own and its experiment's), oldest first, each with its state there. */
export async function loadStoredRules(db: Executor, dataset: Pick<WatchedDataset, 'id' | 'organizationId' | 'experimentId'>): Promise<StoredRule[]> {
  const rows = await db
    .selectFrom('limit_rules as r')
    .leftJoin('limit_states as s', (join) => join.onRef('s.rule_id', '=', 'r.id').on('s.dataset_id', '=', dataset.id))
    .selectAll('r')
    .select([
      RULE_STAMP.as('stamp'),
      's.phase',
      's.event_id',
      sql<number | null>`s.since_us::float8`.as('since_us'),
      sql<number | null>`s.worst_value`.as('worst_value'),
      sql<number | null>`s.worst_us::float8`.as('worst_us'),
      sql<number | null>`s.last_us::float8`.as('last_us'),
      sql<number | null>`s.version::float8`.as('version'),
    ])
    .where('r.organization_id', '=', dataset.organizationId)
    .where((eb) => eb.or([eb('r.dataset_id', '=', dataset.id), eb.and([eb('r.dataset_id', 'is', null), eb('r.experiment_id', '=', dataset.experimentId)])]))
    .orderBy('r.created_at')
    .orderBy('r.id')
    .execute();
  return rows.map((r) => {
    const { stamp, phase, event_id, since_us, worst_value, worst_us, last_us, version, ...rule } = r;
    return {
      rule,
      stamp,
      state: { phase: (phase ?? 'clear') as LimitPhase, sinceUs: since_us, worstValue: worst_value, worstUs: worst_us, lastUs: last_us, eventId: event_id },
      version,
    };
  });
}

/** Channel names of a wide dataset by ch_N index: a LIMIT message names the channel people know. */
export async function wideChannelNames(db: Executor, datasetId: string): Promise<Map<number, string>> {
  const rows = await db.selectFrom('channels').select(['col_index', 'name']).where('dataset_id', '=', datasetId).where('col_index', 'is not', null).execute();
  return new Map(rows.map((r) => [r.col_index!, r.name]));
}

/** What one batch did to one rule on the dataset. */
export interface RuleChange {
  rule: LimitRuleRow;
  /** StoredRule.stamp as read. */
  stamp: string;
  /** How its events name the signal (`ATTITUDE.roll`, a wide channel's name). */
  label: string;
  /** The state's version as read; null: no state row was read. */
  expectedVersion: number | null;
  /** The open crossing's event before the batch (an `ended` transition ends it). */
  openEventId: string | null;
  /** The state after the batch (its eventId is filled in here). */
  state: CrossingState;
  transitions: Transition[];
}

/** A LIMIT event stored or ended by a transaction, as its webhook notification carries it. */
export interface ChangedLimitEvent {
  eventId: string;
  rule: LimitRuleRow;
  /** `started`: the event was stored; `ended`: its end was. */
  phase: 'started' | 'ended';
}

/** Someone else moved a rule or its state since it was read: read again, then evaluate again. */
export class StaleLimitState extends Error {
  override name = 'StaleLimitState';
}

const UNIQUE_VIOLATION = '23505';
const FOREIGN_KEY_VIOLATION = '23503';

/**
 * Store a batch's changes in one transaction: the rules are share-locked and must be as read (an update
 * or delete through the API in between makes this stale), each started crossing inserts its event (the
 * unique key on rule, dataset and start makes one already stored the one it links to, with no second
 * event), each ended one ends its event, and each state is written only from the version read. Returns
 * the new versions and the events changed; throws StaleLimitState when anything was not as read.
 */
export async function persistChanges(
  db: Db,
  dataset: Pick<WatchedDataset, 'id' | 'organizationId'>,
  changes: readonly RuleChange[],
  inTransaction?: (tx: Executor, events: readonly ChangedLimitEvent[]) => Promise<void>,
): Promise<{ versions: Map<string, number>; events: ChangedLimitEvent[] }> {
  try {
    return await db.transaction().execute(async (tx) => {
      const ids = changes.map((c) => c.rule.id);
      const current = await tx.selectFrom('limit_rules as r').select(['r.id', RULE_STAMP.as('stamp')]).where('r.id', 'in', ids).forShare().execute();
      const stamps = new Map(current.map((r) => [r.id, r.stamp]));
      for (const c of changes) {
        if (stamps.get(c.rule.id) !== c.stamp) throw new StaleLimitState(`rule ${c.rule.id} changed or was deleted`);
      }
      const events: ChangedLimitEvent[] = [];
      const versions = new Map<string, number>();
      for (const c of changes) {
        let open = c.openEventId;
        for (const t of c.transitions) {
          if (t.kind === 'started') {
            const stored = await insertLimitEvent(tx, dataset, c, t);
            open = stored.id;
            if (stored.inserted) events.push({ eventId: stored.id, rule: c.rule, phase: 'started' });
          } else if (open !== null) {
            if (await endLimitEvent(tx, c.rule, open, t)) events.push({ eventId: open, rule: c.rule, phase: 'ended' });
            open = null;
          }
        }
        c.state.eventId = c.state.phase === 'active' ? open : null;
        versions.set(c.rule.id, await writeState(tx, dataset.id, c));
      }
      await inTransaction?.(tx, events);
      return { versions, events };
    });
  } catch (error) {
    // Another replica inserted the same state row first, or the rule was deleted under us.
    const code = (error as { code?: unknown } | null)?.code;
    if (code === UNIQUE_VIOLATION || code === FOREIGN_KEY_VIOLATION) throw new StaleLimitState(String((error as Error).message));
    throw error;
  }
}

async function insertLimitEvent(tx: Executor, dataset: Pick<WatchedDataset, 'id' | 'organizationId'>, c: RuleChange, t: Extract<Transition, { kind: 'started' }>) {
  const time = timestampOfUs(t.startUs);
  const inserted = await tx
    .insertInto('events')
    .values({
      id: crypto.randomUUID(),
      organization_id: dataset.organizationId,
      dataset_id: dataset.id,
      time,
      kind: 'LIMIT',
      message: limitMessage(c.rule, c.label),
      data: JSON.stringify(limitEventData(c.rule, { startUs: t.startUs, endUs: null, worstValue: t.worstValue, worstUs: t.worstUs })),
      limit_rule_id: c.rule.id,
    })
    .onConflict((oc) => oc.columns(['limit_rule_id', 'dataset_id', 'time']).where('limit_rule_id', 'is not', null).doNothing())
    .returning('id')
    .executeTakeFirst();
  if (inserted) return { id: inserted.id, inserted: true };
  // This crossing was stored before (its state was lost, or a replay): it is that event, not a second one.
  const existing = await tx
    .selectFrom('events')
    .select('id')
    .where('limit_rule_id', '=', c.rule.id)
    .where('dataset_id', '=', dataset.id)
    .where('time', '=', time)
    .executeTakeFirstOrThrow();
  return { id: existing.id, inserted: false };
}

/** End an open LIMIT event: its end, worst value and `active: false`. False when it was not open (ended already). */
export async function endLimitEvent(
  tx: Executor,
  rule: LimitRuleRow,
  eventId: string,
  t: { startUs: number; endUs: number; worstValue: number; worstUs: number },
): Promise<boolean> {
  const ended = await tx
    .updateTable('events')
    .set({ data: JSON.stringify(limitEventData(rule, t)), updated_at: sql<Date>`now()` })
    .where('id', '=', eventId)
    .where(sql<boolean>`data->>'active' = 'true'`)
    .returning('id')
    .executeTakeFirst();
  return ended !== undefined;
}

/** Write the state from the version read; the new version, or StaleLimitState when it had moved. */
async function writeState(tx: Executor, datasetId: string, c: RuleChange): Promise<number> {
  const s = c.state;
  const values = {
    phase: s.phase,
    since_us: s.sinceUs === null ? null : Math.round(s.sinceUs),
    worst_value: s.worstValue,
    worst_us: s.worstUs === null ? null : Math.round(s.worstUs),
    last_us: s.lastUs === null ? null : Math.round(s.lastUs),
    event_id: s.eventId,
  };
  const written =
    c.expectedVersion === null
      ? await tx
          .insertInto('limit_states')
          .values({ rule_id: c.rule.id, dataset_id: datasetId, ...values })
          .onConflict((oc) => oc.columns(['dataset_id', 'rule_id']).doNothing())
          .returning(sql<number>`version::float8`.as('version'))
          .executeTakeFirst()
      : await tx
          .updateTable('limit_states')
          .set({ ...values, version: sql<number>`version + 1`, updated_at: sql<Date>`now()` })
          .where('dataset_id', '=', datasetId)
          .where('rule_id', '=', c.rule.id)
          .where('version', '=', c.expectedVersion)
          .returning(sql<number>`version::float8`.as('version'))
          .executeTakeFirst();
  if (!written) throw new StaleLimitState(`the state of rule ${c.rule.id} on dataset ${datasetId} moved`);
  return written.version;
}
