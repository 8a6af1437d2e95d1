import { base64UrlLength } from './encoding.ts';
import { randomToken } from './random.ts';

/** Every webhook signing secret starts with this; the whole string, prefix included, is the HMAC key. */
export const WEBHOOK_SECRET_PREFIX = 'whsec_';
const WEBHOOK_SECRET_BYTES = 32;
const WEBHOOK_SECRET_RE = new RegExp(
  `^${WEBHOOK_SECRET_PREFIX}[A-Za-z0-9_-]{${base64UrlLength(WEBHOOK_SECRET_BYTES)}}$`,
);

/** A fresh signing secret: `whsec_` + 43 base64url characters (256 random bits). */
export function generateWebhookSecret(): string {
  return randomToken(WEBHOOK_SECRET_PREFIX, WEBHOOK_SECRET_BYTES);
}

/** Exact shape of a secret this service issues. */
export function isWebhookSecret(s: unknown): s is string {
  return typeof s === 'string' && WEBHOOK_SECRET_RE.test(s);
}
