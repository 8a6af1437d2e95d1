// What every request carries and how a query is written, without zod or the route table: the console's
// browser script uses these alone.

export const REQUEST_ID_HEADER = 'x-request-id';

/** A fresh request id in the service's own form, so logs on both sides read alike. */
export function newRequestId(): string {
  return `req_${crypto.randomUUID().replaceAll('-', '')}`;
}

/**
 * A query object as URL parameters: arrays repeat their key (`channel=a&channel=b`), undefined is left
 * out, everything else is its string form.
 */
export function queryString(input: Record<string, unknown>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(input)) {
    if (value === undefined || value === null) continue;
    for (const item of Array.isArray(value) ? value : [value]) params.append(key, item instanceof Date ? item.toISOString() : String(item));
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}
