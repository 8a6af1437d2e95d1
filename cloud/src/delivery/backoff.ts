/**
 * When to try a webhook again, and whether to. Pure functions; the worker feeds them the clock.
 *
 * The schedule is short because a command is only useful until its ack deadline (default 60 s, at most
 * an hour): Standard Webhooks' hours-long schedule suits events that stay meaningful for days, not
 * "arm the payload release". Jitter keeps many commands failing at once from retrying in lock-step.
 * The schedule itself is configuration (SORTIE_WEBHOOK_RETRY_SCHEDULE, read by platform/config.ts).
 */

/** Jitter as a fraction of the wait: ±20 %. */
export const JITTER = 0.2;

/**
 * Wait before attempt `failedAttempts + 1`, after `failedAttempts` failures (≥ 1). The last entry of the
 * schedule repeats. `random` is in [0, 1).
 */
export function retryDelayMs(failedAttempts: number, schedule: readonly number[], random: number = Math.random()): number {
  const base = schedule[Math.min(failedAttempts, schedule.length) - 1] ?? schedule[schedule.length - 1]!;
  return Math.max(1, Math.round(base * (1 - JITTER + 2 * JITTER * random)));
}

/** The longest Retry-After we honour; a receiver asking for more gets this (and the deadline still rules). */
export const MAX_RETRY_AFTER_MS = 5 * 60_000;

/** `Retry-After` as delay-seconds or an HTTP date → milliseconds from now, or undefined when absent/garbled. */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // An HTTP date names a weekday and a month; anything else Date.parse might accept (`-3`) is not one.
  if (!/[a-z]{3}/i.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}

export type AttemptVerdict = 'success' | 'retry' | 'final';

/**
 * What an HTTP answer means for the delivery.
 * - 2xx: delivered.
 * - 408 Request Timeout and 429 Too Many Requests: retried. Both say "not now", not "never"; treating
 *   them as final would drop a command because the receiver was busy.
 * - Any other 4xx: final (the spec: "A 4xx answer from the receiver is final").
 * - 3xx: final. Redirects are never followed, so asking again gets the same answer; the endpoint's URL
 *   needs fixing.
 * - 5xx and 1xx (not a final answer for us): retried.
 */
export function classifyStatus(statusCode: number): AttemptVerdict {
  if (statusCode >= 200 && statusCode < 300) return 'success';
  if (statusCode === 408 || statusCode === 429) return 'retry';
  if (statusCode >= 300 && statusCode < 500) return 'final';
  return 'retry';
}

/** Statuses whose Retry-After we read. */
export function honoursRetryAfter(statusCode: number): boolean {
  return statusCode === 429 || statusCode === 503;
}

/**
 * The wait before the next attempt, or undefined when there should be none because it would start at
 * or after the ack deadline (nobody can ack a command after it).
 */
export function nextAttemptDelay(input: {
  failedAttempts: number;
  schedule: readonly number[];
  nowMs: number;
  deadlineMs: number;
  statusCode?: number | undefined;
  retryAfter?: string | undefined;
  random?: number;
}): number | undefined {
  let delay = retryDelayMs(input.failedAttempts, input.schedule, input.random);
  if (input.statusCode !== undefined && honoursRetryAfter(input.statusCode)) {
    const asked = parseRetryAfter(input.retryAfter, input.nowMs);
    // A longer wait asked by the receiver is honoured up to the cap; a shorter one does not hurry us.
    if (asked !== undefined) delay = Math.max(delay, Math.min(asked, MAX_RETRY_AFTER_MS));
  }
  return input.nowMs + delay < input.deadlineMs ? delay : undefined;
}
