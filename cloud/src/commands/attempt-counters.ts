import { sql, type RawBuilder } from 'kysely';

/**
 * A command's delivery counters (`delivery_attempts`, `delivered_at`), kept by the statement that records
 * delivery attempts (delivery/jobs.ts recordAttempts): this is its part that writes `commands`, a CTE body.
 * A row changes once per statement, so the attempts of one batch are folded per command first: how many,
 * and the earliest success (null when none succeeded). The first delivery stays the one recorded.
 */
export function recordDeliveryAttempts(counts: ReadonlyMap<string, { n: number; deliveredAt: Date | null }>): RawBuilder<unknown> {
  return sql`
      update commands c set
        delivery_attempts = c.delivery_attempts + u.n,
        delivered_at = case when u.delivered_at is null then c.delivered_at else coalesce(c.delivered_at, u.delivered_at) end
      from unnest(
        ${[...counts.keys()]}::uuid[], ${[...counts.values()].map((c) => c.n)}::int[],
        ${[...counts.values()].map((c) => c.deliveredAt?.toISOString() ?? null)}::timestamptz[]
      ) as u(id, n, delivered_at)
      where c.id = u.id`;
}
