/** Quoting for statements built as text (DDL, COPY, TimescaleDB calls), where no parameter can be bound. */

/** A name as a PostgreSQL quoted identifier. */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** A string as a PostgreSQL string literal. */
export function quoteLiteral(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** PostgreSQL's epoch (2000-01-01) in µs since the Unix epoch: binary timestamps count from it. */
export const PG_EPOCH_US = 946_684_800_000_000;
