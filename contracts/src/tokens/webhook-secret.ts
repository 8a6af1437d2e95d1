import { tokenFormat } from './token-format.ts';

/** Every webhook signing secret starts with this; the whole string, prefix included, is the HMAC key. */
export const WEBHOOK_SECRET_PREFIX = 'whsec_';
const WEBHOOK_SECRET = tokenFormat(WEBHOOK_SECRET_PREFIX, 32);

/** A fresh signing secret: `whsec_` + 43 base64url characters (256 random bits). */
export function generateWebhookSecret(): string {
  return WEBHOOK_SECRET.generate();
}

/** Exact shape of a secret this service issues. */
export function isWebhookSecret(s: unknown): s is string {
  return WEBHOOK_SECRET.matches(s);
}
