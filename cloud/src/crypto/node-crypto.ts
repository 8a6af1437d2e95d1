import { createHash, createHmac } from 'node:crypto';
import { deliveryHeaders, deliveryTimestamp, formatSignatureHeader, signedPayloadHead, type SignWebhookInput } from '@sortie/contracts';

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
  const timestamp = deliveryTimestamp(input.nowMs);
  const head = signedPayloadHead(timestamp);
  const body = typeof input.rawBody === 'string' ? Buffer.from(input.rawBody, 'utf8') : input.rawBody;
  const signatures = input.secrets.map((secret) => createHmac('sha256', Buffer.from(secret, 'utf8')).update(head).update(body).digest('hex'));
  return deliveryHeaders(input, timestamp, formatSignatureHeader(signatures));
}
