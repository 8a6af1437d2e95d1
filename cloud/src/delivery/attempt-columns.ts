import { sql } from 'kysely';
import type { CommandRow, WebhookEndpointRow } from '../db/schema.ts';

/**
 * The whole command and endpoint rows, as the statements that prepare a delivery attempt read them: the
 * delivery worker's lease (jobs.ts) and delivery's part of the dispatch statement (dispatch-jobs.ts, for
 * the first attempt, made at once by the dispatching process).
 */

/**
 * The column names of a row type, each key of Row exactly as db/schema.ts declares it: tsc rejects a list
 * that misses a key or names one the row lacks, so a column added to the schema cannot reach an attempt
 * as `undefined`. (jobs.test.ts checks the lists against the migrated tables too.)
 */
function columnsOf<Row>() {
  return <const C extends readonly (keyof Row & string)[]>(
    columns: C & ([Exclude<keyof Row, C[number]>] extends [never] ? unknown : { missing: Exclude<keyof Row, C[number]> }),
  ): C => columns;
}

/** Every column of `commands`, in the table's order: an attempt needs the whole command for its body. */
export const COMMAND_COLUMNS = columnsOf<CommandRow>()([
  'id', 'organization_id', 'experiment_id', 'dataset_id', 'command_text', 'description', 'args', 'template_key', 'category',
  'rel_time', 'issued_at', 'issued_by_name', 'issued_by_email', 'issued_by_key_id', 'status', 'status_detail', 'queued_at',
  'delivered_at', 'acked_at', 'ack_deadline_at', 'vehicle_time', 'ack_payload', 'delivery_attempts', 'client_token',
  'retracted_at', 'retracted_reason', 'destructive',
]);

/** Every column of `webhook_endpoints`, in the table's order: health, secrets and URL checks read them. */
export const ENDPOINT_COLUMNS = columnsOf<WebhookEndpointRow>()([
  'id', 'organization_id', 'label', 'url', 'secret_ciphertext', 'previous_secret_ciphertext', 'rotating_until', 'disabled_at',
  'disabled_reason', 'consecutive_failures', 'deleted_at', 'created_at', 'updated_at', 'limit_events',
]);

/** `Row` with every column renamed `<prefix><column>`; null when a left join found nothing. */
export type Prefixed<Row, P extends string> = { [K in keyof Row & string as `${P}${K}`]: Row[K] | null };

/**
 * The select list of the command (`c`) and endpoint (`e`) columns, prefixed `c_` and `e_` so the two
 * tables' `id`s stay apart. Built once from the constant lists above (never from input), so raw text is
 * safe and adds nothing per statement on the delivery hot path.
 */
export const PREFIXED_COLUMNS = sql.raw(
  [...COMMAND_COLUMNS.map((c) => `c.${c} as c_${c}`), ...ENDPOINT_COLUMNS.map((c) => `e.${c} as e_${c}`)].join(', '),
);

/** The `prefix`ed columns of a row as the table's row (the join matched, so none is the join's null). */
export function unprefix<Row>(r: object, prefix: string, columns: readonly (keyof Row & string)[]): Row {
  const source = r as Record<string, unknown>;
  const row: Record<string, unknown> = {};
  for (const column of columns) row[column] = source[prefix + column];
  return row as Row;
}
