import { sql, type RawBuilder } from 'kysely';
import type { Executor } from '../db/executor.ts';

/**
 * An endpoint's health columns (`consecutive_failures`, `disabled_at`, `disabled_reason`), written here
 * with the rest of `webhook_endpoints`; delivery decides when, these functions how.
 */

/**
 * The part of delivery's record statement that keeps failure streaks (its final statement; delivery/jobs.ts):
 * per endpoint, whether a success in the batch reset the streak and how many failures came after the last
 * success. An endpoint with no failures that only succeeded is not rewritten. Returns each endpoint changed
 * with its streak afterwards and whether it is disabled.
 */
export function updateFailureStreaks(streaks: ReadonlyMap<string, { reset: boolean; add: number }>): RawBuilder<unknown> {
  return sql`
    update webhook_endpoints e set
      consecutive_failures = case when u.reset then u.add else e.consecutive_failures + u.add end
    from unnest(${[...streaks.keys()]}::uuid[], ${[...streaks.values()].map((e) => e.reset)}::bool[], ${[...streaks.values()].map((e) => e.add)}::int[])
      as u(id, reset, add)
    -- A success on an endpoint with no failures changes nothing: the row is not rewritten.
    where e.id = u.id and not (u.reset and u.add = 0 and e.consecutive_failures = 0)
    returning e.id, e.consecutive_failures, e.disabled_at is not null as disabled`;
}

/**
 * Disable an endpoint for `reason` unless it is disabled or deleted already: a compare-and-set on
 * `disabled_at is null`, so of several callers one disables it. What was disabled, or undefined.
 */
export function disableEndpoint(
  db: Executor,
  input: { endpointId: string; reason: string; now: Date },
): Promise<{ organization_id: string; label: string; url: string } | undefined> {
  return db
    .updateTable('webhook_endpoints')
    .set({ disabled_at: input.now, disabled_reason: input.reason, updated_at: input.now })
    .where('id', '=', input.endpointId)
    .where('disabled_at', 'is', null)
    .where('deleted_at', 'is', null)
    .returning(['organization_id', 'label', 'url'])
    .executeTakeFirst();
}
