/** A name as a PostgreSQL quoted identifier, for statements built as text (DDL, COPY). */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
