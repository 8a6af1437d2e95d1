import { z } from 'zod';

export const Uuid = z.uuid({ error: 'must be a UUID' });

const UUID_SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Whether `value` has the shape of a UUID: 8-4-4-4-12 hex digits, either case. Looser than `Uuid`,
 * which also checks the RFC 9562 version and variant digits: this is the test for places that sort
 * ids from other strings (a gRPC id field, an admin CLI flag, a channel UUID used as a value key)
 * and must keep taking ids any UUID generator produced. One copy, so those places cannot drift apart.
 */
export function isUuid(value: string): boolean {
  return UUID_SHAPE.test(value);
}

/**
 * Text the service can store as it was sent: no NUL (U+0000), which PostgreSQL's text and jsonb cannot
 * hold, and no unpaired UTF-16 surrogate, which is not Unicode (UTF-8 cannot carry it, and PostgreSQL
 * would otherwise have received U+FFFD in its place).
 */
export function isStorableText(value: string): boolean {
  return !value.includes('\u0000') && value.isWellFormed();
}

export const STORABLE_TEXT_MESSAGE = 'must not contain NUL (U+0000) or an unpaired UTF-16 surrogate';

/** Every string a request may carry: one rule for every text field, so no field can reach the database with what it cannot store. */
export function text() {
  return z.string().refine(isStorableText, { error: STORABLE_TEXT_MESSAGE });
}

/** Deeper free-form JSON than this is refused: no real payload needs it, and a recursive reader could overflow on it. */
export const MAX_JSON_DEPTH = 64;

/**
 * Where a free-form JSON value breaks the rules, or undefined: nesting deeper than MAX_JSON_DEPTH, or a key
 * or string that is not storable text. Walked with an explicit stack, so 10,000 levels cannot overflow it.
 */
export function jsonProblem(value: unknown): { path: (string | number)[]; message: string } | undefined {
  const stack: { value: unknown; path: (string | number)[] }[] = [{ value, path: [] }];
  while (stack.length > 0) {
    const { value: current, path } = stack.pop()!;
    if (typeof current === 'string') {
      if (!isStorableText(current)) return { path, message: STORABLE_TEXT_MESSAGE };
      continue;
    }
    if (current === null || typeof current !== 'object') continue;
    if (path.length > MAX_JSON_DEPTH) return { path, message: `nests deeper than ${MAX_JSON_DEPTH} levels` };
    if (Array.isArray(current)) {
      current.forEach((item, i) => stack.push({ value: item, path: [...path, i] }));
      continue;
    }
    for (const [key, item] of Object.entries(current)) {
      if (!isStorableText(key)) return { path: [...path, key], message: `key ${STORABLE_TEXT_MESSAGE}` };
      stack.push({ value: item, path: [...path, key] });
    }
  }
  return undefined;
}

/** A free-form JSON object (command args, event data, ack payloads): any shape, within what jsonb can hold. */
export function jsonObject(options?: { error?: string }) {
  // Keys at every depth, the top one included, are checked by the one walk below (one rule, one message).
  return z.record(z.string(), z.unknown(), options).superRefine((value, ctx) => {
    const problem = jsonProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', path: problem.path, message: problem.message });
  });
}

/**
 * The largest |seconds since 1970| of a supported instant: with a whole second of sub-second digits on
 * top, its microseconds still stay below 2^53, so every route stores and compares it as an exact double
 * (years 1685 to 2255). HTTP timestamps (below) and gRPC ones (the cloud's wide decoder) share it.
 */
export const MAX_TIMESTAMP_SECONDS = Math.floor(Number.MAX_SAFE_INTEGER / 1_000_000) - 1;
export const TIMESTAMP_RANGE_MESSAGE = 'is outside the supported range (years 1685 to 2255)';

/** Whether an ISO 8601 string's instant is in the supported range; a string that is no timestamp at all is left to the format check. */
function inSupportedRange(value: string): boolean {
  const ms = Date.parse(value);
  // Whole seconds, floored as a protobuf Timestamp splits them (the sub-second part is never negative).
  return Number.isNaN(ms) || Math.abs(Math.floor(ms / 1000)) <= MAX_TIMESTAMP_SECONDS;
}

/** ISO 8601 timestamp with `Z` or an offset, within the years every route can store (1685 to 2255); the service always answers in UTC with `Z`. */
export const Timestamp = z.iso
  .datetime({ offset: true, error: 'must be an ISO 8601 timestamp' })
  .refine(inSupportedRange, { error: TIMESTAMP_RANGE_MESSAGE });

/** A timestamp as the service writes it (always UTC). */
export const TimestampOut = text();

export const ChannelName = text()
  .min(2, 'must be 2 to 120 characters')
  .max(120, 'must be 2 to 120 characters');
