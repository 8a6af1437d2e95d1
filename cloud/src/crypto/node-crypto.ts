import { createHash, createHmac } from 'node:crypto';
import { WEBHOOK_HEADERS, WEBHOOK_USER_AGENT, type SignWebhookInput } from '@sortie/contracts';

/**
 * The server's hot-path twins of contracts' hashing and signing. contracts uses Web Crypto so the
 * receiver kit runs in browsers and Deno too; in Node each Web Crypto call costs 70–170 µs against
 * 2–4 µs here (measured: docs/PERFORMANCE.md), which is paid on every API request and every delivery.
 * Tests pin both to the same outputs.
 */

/** SHA-256 hex of the UTF-8 text: what hashApiKey and hashAckToken compute. */
export function sha256HexSync(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** Same headers as contracts' signWebhook. */
export function signWebhookSync(input: SignWebhookInput): Record<string, string> {
  if (input.secrets.length < 1 || input.secrets.length > 2) throw new RangeError('signWebhookSync needs one or two live secrets');
  const timestamp = String(Math.floor((input.nowMs ?? Date.now()) / 1000));
  const body = typeof input.rawBody === 'string' ? Buffer.from(input.rawBody, 'utf8') : input.rawBody;
  const signature = input.secrets
    .map((secret) => `v1=${createHmac('sha256', Buffer.from(secret, 'utf8')).update(`v1:${timestamp}:`).update(body).digest('hex')}`)
    .join(',');
  return {
    'content-type': 'application/json',
    'user-agent': WEBHOOK_USER_AGENT,
    [WEBHOOK_HEADERS.event]: input.eventType,
    [WEBHOOK_HEADERS.delivery]: input.deliveryId,
    [WEBHOOK_HEADERS.timestamp]: timestamp,
    [WEBHOOK_HEADERS.signature]: signature,
  };
}
