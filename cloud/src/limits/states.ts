import type { LimitEventData } from '@sortie/contracts';
import { sql } from 'kysely';
import type { Db } from '../db/connect.ts';
import type { Executor } from '../db/executor.ts';
import type { LimitPhase, LimitRuleRow } from '../db/schema.ts';
import type { WatchedDataset } from '../platform/limit-watch.ts';
import { insertLimitEvents, replaceOpenLimitEvent, replaceOpenLimitEventData, updateOpenLimitEventWorst } from '../events/queries.ts';
import { isoOfUs, limitEventData, limitMessage, type CrossingState, type Transition } from './crossing.ts';

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
  datasetId: string;
  /** `started`: the event was stored; `ended`: its end was. */
  phase: 'started' | 'ended';
  /** The event's data at that phase (a crossing that starts and ends in one batch is told twice, as it was each time). */
  data: LimitEventData;
}

/** Someone else moved a rule or its state since it was read: read again, then evaluate again. */
export class StaleLimitState extends Error {
  override name = 'StaleLimitState';
}

const UNIQUE_VIOLATION = '23505';
const FOREIGN_KEY_VIOLATION = '23503';

/**
 * Store a batch's changes in one transaction of a fixed number of statements, however many crossings
 * it holds: the rules are share-locked and must be as read (an edit or delete through the API in between
 * makes this stale); one insert stores every crossing that started (the unique key on rule, dataset and
 * start makes one already stored the event it links to, with no second event); one update ends every
 * crossing that ended; one upsert writes every state, each only from the version read. Returns the new
 * versions and the events changed; throws StaleLimitState when anything was not as read.
 */
export async function persistChanges(
  db: Db,
  dataset: Pick<WatchedDataset, 'id' | 'organizationId'>,
  changes: readonly RuleChange[],
  inTransaction?: (tx: Executor, events: readonly ChangedLimitEvent[]) => Promise<void>,
): Promise<{ versions: Map<string, number>; events: ChangedLimitEvent[]; worsened: number }> {
  try {
    return await db.transaction().execute(async (tx) => {
      const ids = changes.map((c) => c.rule.id);
      const current = await tx.selectFrom('limit_rules as r').select(['r.id', RULE_STAMP.as('stamp')]).where('r.id', 'in', ids).forShare().execute();
      const stamps = new Map(current.map((r) => [r.id, r.stamp]));
      for (const c of changes) {
        if (stamps.get(c.rule.id) !== c.stamp) throw new StaleLimitState(`rule ${c.rule.id} changed or was deleted`);
      }

      // Each rule's transitions in order; an event started here has a provisional id until it is stored.
      const starts: Start[] = [];
      const ends: { key: string; data: LimitEventData }[] = [];
      const finalOpen = new Map<RuleChange, string | null>();
      for (const c of changes) {
        let open = c.openEventId;
        for (const t of c.transitions) {
          if (t.kind === 'started') {
            open = crypto.randomUUID();
            const data = limitEventData(c.rule, { startUs: t.startUs, endUs: null, worstValue: t.worstValue, worstUs: t.worstUs });
            starts.push({ key: open, rule: c.rule, startUs: Math.round(t.startUs), message: limitMessage(c.rule, c.label), data });
          } else if (open !== null) {
            ends.push({ key: open, data: limitEventData(c.rule, t) });
            open = null;
          }
        }
        finalOpen.set(c, c.state.phase === 'active' ? open : null);
      }

      const inserted = await insertStartedEvents(tx, dataset, starts);
      const before = await storedCrossings(tx, dataset.id, starts.filter((start) => !inserted.has(start.key)));
      const id = (key: string) => before.get(key) ?? key;
      const ended = await endEvents(tx, ends.map((e) => ({ id: id(e.key), data: e.data })));

      const events: ChangedLimitEvent[] = [
        ...starts.filter((start) => inserted.has(start.key)).map((start) => ({ eventId: start.key, datasetId: dataset.id, phase: 'started' as const, data: start.data })),
        ...ended.map((e) => ({ eventId: e.id, datasetId: dataset.id, phase: 'ended' as const, data: e.data })),
      ];
      for (const c of changes) {
        const open = finalOpen.get(c)!;
        c.state.eventId = open === null ? null : id(open);
      }
      // A crossing still open whose worst value moved since its event was written: the event says so now,
      // so a follower's banner, a list of events and an export show how far it went while it lasts.
      const worsened = await updateWorst(tx, changes.filter((c) => c.state.phase === 'active' && c.state.eventId !== null));
      const versions = await writeStates(tx, dataset.id, changes);
      await inTransaction?.(tx, events);
      return { versions, events, worsened };
    });
  } catch (error) {
    // The rule was deleted under us (the state row's key), or another replica's row got there first.
    const code = (error as { code?: unknown } | null)?.code;
    if (code === UNIQUE_VIOLATION || code === FOREIGN_KEY_VIOLATION) throw new StaleLimitState(String((error as Error).message));
    throw error;
  }
}

/** A crossing that started in the batch: its provisional event id, and the event's row. */
interface Start {
  key: string;
  rule: LimitRuleRow;
  startUs: number;
  message: string;
  data: LimitEventData;
}

/** One insert of every LIMIT event a batch started; the provisional ids it stored (the others were stored before). */
async function insertStartedEvents(tx: Executor, dataset: Pick<WatchedDataset, 'id' | 'organizationId'>, starts: readonly Start[]): Promise<Set<string>> {
  if (starts.length === 0) return new Set();
  const stored = await insertLimitEvents(tx, {
    organizationId: dataset.organizationId,
    datasetId: dataset.id,
    starts: starts.map((s) => ({ id: s.key, us: s.startUs, message: s.message, data: JSON.stringify(s.data), ruleId: s.rule.id })),
  });
  return new Set(stored);
}

/** Crossings stored before (their state was lost, or a replay): the event each is, by rule and start. Provisional id → stored id. */
async function storedCrossings(tx: Executor, datasetId: string, starts: readonly Start[]): Promise<Map<string, string>> {
  if (starts.length === 0) return new Map();
  const rows = await sql<{ id: string; rule_id: string; us: number }>`
    select e.id, u.rule_id, u.us::float8 as us
    from unnest(${starts.map((s) => s.rule.id)}::uuid[], ${starts.map((s) => s.startUs)}::int8[]) as u(rule_id, us)
    join events e on e.dataset_id = ${datasetId}::uuid and e.limit_rule_id = u.rule_id and e.time = timestamptz 'epoch' + u.us * interval '1 microsecond'`.execute(tx);
  const byCrossing = new Map(rows.rows.map((r) => [`${r.rule_id}/${r.us}`, r.id]));
  const out = new Map<string, string>();
  for (const s of starts) {
    const stored = byCrossing.get(`${s.rule.id}/${s.startUs}`);
    if (stored) out.set(s.key, stored);
  }
  return out;
}

/** One update ending every event among `ends` still open (a row changes once per statement: the last data for an id wins). */
async function endEvents(tx: Executor, ends: readonly { id: string; data: LimitEventData }[]): Promise<{ id: string; data: LimitEventData }[]> {
  if (ends.length === 0) return [];
  const last = new Map(ends.map((e) => [e.id, e.data]));
  const changed = await replaceOpenLimitEventData(tx, new Map([...last].map(([id, d]) => [id, JSON.stringify(d)])));
  return changed.map((id) => ({ id, data: last.get(id)! }));
}

/**
 * One update of the open LIMIT events whose worst value the batch moved (its value and time), leaving
 * those already up to date alone. Not a notification: webhooks carry a crossing's start and end only.
 * How many events changed.
 */
async function updateWorst(tx: Executor, open: readonly RuleChange[]): Promise<number> {
  if (open.length === 0) return 0;
  const changed = await updateOpenLimitEventWorst(
    tx,
    open.map((c) => ({ id: c.state.eventId!, value: c.state.worstValue, at: isoOfUs(c.state.worstUs!) })),
  );
  return changed.length;
}

/**
 * One upsert of every changed state, each from the version read: a row is inserted only where none was
 * read, and updated only at the version read. The new versions, or StaleLimitState.
 */
async function writeStates(tx: Executor, datasetId: string, changes: readonly RuleChange[]): Promise<Map<string, number>> {
  const col = <T>(f: (c: RuleChange) => T) => changes.map(f);
  const us = (v: number | null) => (v === null ? null : Math.round(v));
  const rows = await sql<{ rule_id: string; version: number }>`
    insert into limit_states as s (rule_id, dataset_id, phase, since_us, worst_value, worst_us, last_us, event_id, version)
    select u.rule_id, ${datasetId}::uuid, u.phase, u.since_us, u.worst_value, u.worst_us, u.last_us, u.event_id, u.version
    from unnest(${col((c) => c.rule.id)}::uuid[], ${col((c) => c.state.phase)}::text[], ${col((c) => us(c.state.sinceUs))}::int8[],
                ${col((c) => c.state.worstValue)}::float8[], ${col((c) => us(c.state.worstUs))}::int8[], ${col((c) => us(c.state.lastUs))}::int8[],
                ${col((c) => c.state.eventId)}::uuid[], ${col((c) => (c.expectedVersion === null ? 0 : c.expectedVersion + 1))}::int8[])
      as u(rule_id, phase, since_us, worst_value, worst_us, last_us, event_id, version)
    on conflict (dataset_id, rule_id) do update set
      phase = excluded.phase, since_us = excluded.since_us, worst_value = excluded.worst_value, worst_us = excluded.worst_us,
      last_us = excluded.last_us, event_id = excluded.event_id, version = excluded.version, updated_at = now()
    -- Read as none, the row arrives as version 0 and none may exist; read at v, it arrives as v + 1 and must still be at v.
    where s.version = excluded.version - 1
    returning s.rule_id, s.version::float8 as version`.execute(tx);
  if (rows.rows.length !== changes.length) throw new StaleLimitState(`a state of dataset ${datasetId} moved since it was read`);
  return new Map(rows.rows.map((r) => [r.rule_id, r.version]));
}

/** End an open LIMIT event: its end, worst value and `active: false`. Its data, or undefined when it was not open (ended already). */
export async function endLimitEvent(
  tx: Executor,
  rule: LimitRuleRow,
  eventId: string,
  t: { startUs: number; endUs: number; worstValue: number; worstUs: number },
): Promise<LimitEventData | undefined> {
  const data = limitEventData(rule, t);
  const ended = await replaceOpenLimitEvent(tx, eventId, JSON.stringify(data));
  return ended ? data : undefined;
}
