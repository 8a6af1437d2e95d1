/**
 * `Promise.all(items.map(fn))` with at most `limit` calls in flight, results in input order.
 *
 * Why: a read that fans out one statement per channel (Query over 300 MAVLink signals) would otherwise
 * check out every connection of the pool at once, starving every other request and, past the pool's
 * checkout timeout, failing itself as if the database were down.
 */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  if (!(limit >= 1)) throw new RangeError(`limit must be at least 1, got ${limit}`);
  const results = new Array<R>(items.length);
  let next = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    // Once one call fails the whole map fails, so no new call is started after it.
    while (!failed && next < items.length) {
      const i = next++;
      try {
        results[i] = await fn(items[i]!, i);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
