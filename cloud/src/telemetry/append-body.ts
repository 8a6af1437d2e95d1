import { isStorableText, Timestamp, Uuid, type AppendRequest } from '@sortie/contracts';
import { z } from 'zod';

const MIN_ROWS = 1;
const MAX_ROWS = 10_000;

/**
 * The append body exactly as parsed from JSON, when it certainly passes AppendRequestSchema; otherwise
 * undefined, and the caller validates with the schema itself (which names every failing field).
 *
 * Why: zod's object and record parsers build a copy of each row and of each row's values. A 2,000-row
 * append made 4,000 such objects per request; under a flood, with requests awaiting the database, those
 * copies were promoted to the old generation and sat there as garbage until a full collection, which
 * is most of the HTTP append flood's resident memory (docs/PERFORMANCE.md, Memory). This check reads
 * the body in place and allocates nothing per row.
 *
 * It can only say yes to what the schema takes: every leaf is checked by the contract's own pieces (the
 * Uuid and Timestamp schemas, isStorableText, zod's own plain-object test), and anything it is unsure
 * of (a `__proto__` key, which zod drops) goes to the schema. A property test (append-body.test.ts)
 * compares the two on generated and mutated bodies, so the schema cannot change under it unnoticed.
 * Unknown keys, which the schema strips, stay on the object; the append path never reads them.
 */
export function appendBodyInPlace(body: unknown): AppendRequest | undefined {
  if (!isRecordObject(body)) return undefined;
  const { experimentId, datasetId, rows } = body as Record<string, unknown>;
  if (typeof experimentId !== 'string' || typeof datasetId !== 'string') return undefined;
  if (!Uuid.safeParse(experimentId).success || !Uuid.safeParse(datasetId).success) return undefined;
  if (!Array.isArray(rows) || rows.length < MIN_ROWS || rows.length > MAX_ROWS) return undefined;
  for (let i = 0; i < rows.length; i++) {
    const row: unknown = rows[i];
    if (!isRecordObject(row)) return undefined;
    const { timestamp, values } = row as Record<string, unknown>;
    if (typeof timestamp !== 'string' || !Timestamp.safeParse(timestamp).success) return undefined;
    if (!z.core.util.isPlainObject(values)) return undefined;
    for (const key in values) {
      // for…in also walks inherited enumerable keys; JSON objects have none, but a polluted prototype would.
      if (!Object.hasOwn(values, key) || key === '__proto__' || !isStorableText(key)) return undefined;
      const value: unknown = (values as Record<string, unknown>)[key];
      if (value === null || typeof value === 'boolean') continue;
      if (typeof value === 'number') {
        if (!Number.isFinite(value)) return undefined;
        continue;
      }
      if (typeof value !== 'string' || !isStorableText(value)) return undefined;
    }
  }
  return body as AppendRequest;
}

/** What z.object takes as an object: anything non-null of type object that is not an array. */
function isRecordObject(value: unknown): value is object {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
