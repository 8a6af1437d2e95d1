// Webhook signing and verification (spec: Events → Signature). Web Crypto only, so the same file
// signs in the cloud and verifies in a receiver on Node, Deno, a browser or an edge worker.
import { bytesToHex, hexToBytes, toBytes } from '../tokens/encoding.ts';

/** Header names, lowercase (HTTP header names are case-insensitive; lowercase is how Headers reports them). */
export const WEBHOOK_HEADERS = {
  event: 'x-sortie-event',
  delivery: 'x-sortie-delivery',
  timestamp: 'x-sortie-timestamp',
  signature: 'x-sortie-signature',
} as const;

export const WEBHOOK_USER_AGENT = 'Sortie-Webhook/1';

/** How far a delivery's timestamp may be from the receiver's clock, in seconds, in either direction. */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

/** Version tag in the signed string and in each value of the signature header. */
export const SIGNATURE_VERSION = 'v1';

/** Bounds the HMAC work an attacker can cause with one request (the service sends at most two values). */
const MAX_SIGNATURE_VALUES = 8;

export type WebhookVerificationErrorCode =
  | 'missing_header'
  | 'bad_timestamp'
  | 'timestamp_out_of_tolerance'
  | 'bad_signature_format'
  | 'signature_mismatch'
  | 'invalid_body';

/**
 * Why a delivery was refused. Branch on `code`; `message` is prose. Messages never contain a secret
 * or a computed signature.
 */
export class WebhookVerificationError extends Error {
  readonly code: WebhookVerificationErrorCode;

  constructor(code: WebhookVerificationErrorCode, message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
    this.code = code;
  }
}

export interface VerifiedWebhook {
  /** From the X-Sortie-Event header. Not covered by the signature: act on the body's `eventType`. */
  eventType: string;
  /** From the X-Sortie-Delivery header. Not covered by the signature: deduplicate on the body's command.id / clientToken. */
  deliveryId: string;
  /** X-Sortie-Timestamp, Unix seconds; covered by the signature. */
  timestamp: number;
  /** The body, parsed as JSON only after the signature matched. */
  body: unknown;
}

export interface VerifyWebhookOptions {
  /** Defaults to SIGNATURE_TOLERANCE_SECONDS. */
  toleranceSeconds?: number;
  /** Current time in milliseconds; inject for tests. Defaults to Date.now. */
  now?: () => number;
}

export type WebhookHeadersInput = Headers | Record<string, string | string[] | undefined>;

// Importing an HMAC key is async and not free; the signer uses one or two secrets per endpoint and a
// receiver one or two in total, so a small cache avoids re-importing on every request. Keys are
// non-extractable. Bounded so a process signing for many endpoints does not grow without limit.
const KEY_CACHE_LIMIT = 64;
const keyCache = new Map<string, Promise<CryptoKey>>();

function hmacKey(secret: string): Promise<CryptoKey> {
  if (typeof secret !== 'string' || secret.length === 0) {
    // Deliberately says nothing about the value.
    throw new TypeError('webhook secret must be a non-empty string');
  }
  const cached = keyCache.get(secret);
  if (cached) {
    // Refresh recency so the map's insertion order is least-recently-used first.
    keyCache.delete(secret);
    keyCache.set(secret, cached);
    return cached;
  }
  const pending = globalThis.crypto.subtle.importKey(
    'raw',
    new TextEncoder().encode(secret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign', 'verify'],
  );
  // A failed import must not poison the cache for later calls.
  pending.catch(() => keyCache.delete(secret));
  keyCache.set(secret, pending);
  if (keyCache.size > KEY_CACHE_LIMIT) {
    const oldest = keyCache.keys().next().value;
    if (oldest !== undefined) keyCache.delete(oldest);
  }
  return pending;
}

const TIMESTAMP_RE = /^[0-9]{1,15}$/;

/** What the signed string starts with, before the raw body: `v1:<timestamp>:`. */
export function signedPayloadHead(timestamp: string): string {
  return `${SIGNATURE_VERSION}:${timestamp}:`;
}

/** `v1:` + timestamp + `:` + raw body bytes: nothing added, nothing trimmed. */
function signedPayload(timestamp: string, rawBody: Uint8Array | string): Uint8Array<ArrayBuffer> {
  const head = new TextEncoder().encode(signedPayloadHead(timestamp));
  const body = typeof rawBody === 'string' ? new TextEncoder().encode(rawBody) : rawBody;
  const out = new Uint8Array(head.length + body.length);
  out.set(head, 0);
  out.set(body, head.length);
  return out;
}

function assertTimestamp(timestamp: string): void {
  // Digits only, so the signed string `v1:<ts>:<body>` cannot be made ambiguous by a colon in <ts>.
  if (typeof timestamp !== 'string' || !TIMESTAMP_RE.test(timestamp)) {
    throw new RangeError('webhook timestamp must be Unix seconds as decimal digits');
  }
}

/**
 * Lowercase hex HMAC-SHA256 over `v1:<timestamp>:<rawBody>`, keyed with the UTF-8 bytes of the whole
 * secret (prefix `whsec_` included). A string body is signed as its UTF-8 bytes.
 */
export async function computeSignature(
  secret: string,
  timestamp: string,
  rawBody: Uint8Array | string,
): Promise<string> {
  assertTimestamp(timestamp);
  const key = await hmacKey(secret);
  const mac = await globalThis.crypto.subtle.sign('HMAC', key, signedPayload(timestamp, rawBody));
  return bytesToHex(new Uint8Array(mac));
}

/**
 * Value of X-Sortie-Signature: `v1=<hex>` for one live secret, `v1=<hex>,v1=<hex>` for two during a
 * rotation overlap, in the order given.
 */
export async function signatureHeader(
  secrets: string[],
  timestamp: string,
  rawBody: Uint8Array | string,
): Promise<string> {
  if (!Array.isArray(secrets) || secrets.length < 1 || secrets.length > 2) {
    throw new RangeError('signatureHeader needs one or two live secrets');
  }
  const body = toBytes(rawBody);
  return formatSignatureHeader(await Promise.all(secrets.map((s) => computeSignature(s, timestamp, body))));
}

/** X-Sortie-Signature from the hex signatures, one per live secret, in that order. */
export function formatSignatureHeader(signatures: string[]): string {
  return signatures.map((sig) => `${SIGNATURE_VERSION}=${sig}`).join(',');
}

export interface SignWebhookInput {
  /** Live secrets, one or two (newest first by convention). */
  secrets: string[];
  eventType: string;
  deliveryId: string;
  /** The exact bytes that will be sent. */
  rawBody: Uint8Array | string;
  /** Milliseconds since the epoch; defaults to Date.now(). */
  nowMs?: number;
}

/** Every header of an outbound delivery (spec: Events → Request headers), lowercase names. */
export async function signWebhook(input: SignWebhookInput): Promise<Record<string, string>> {
  const timestamp = deliveryTimestamp(input.nowMs);
  return deliveryHeaders(input, timestamp, await signatureHeader(input.secrets, timestamp, input.rawBody));
}

/** X-Sortie-Timestamp of a delivery sent at `nowMs` (default now): whole Unix seconds. */
export function deliveryTimestamp(nowMs?: number): string {
  return String(Math.floor((nowMs ?? Date.now()) / 1000));
}

/**
 * signWebhook's headers around a signature computed elsewhere: for a signer with its own HMAC
 * (the cloud's node:crypto one), so that only the primitive differs.
 */
export function deliveryHeaders(
  input: Pick<SignWebhookInput, 'eventType' | 'deliveryId'>,
  timestamp: string,
  signature: string,
): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': WEBHOOK_USER_AGENT,
    [WEBHOOK_HEADERS.event]: input.eventType,
    [WEBHOOK_HEADERS.delivery]: input.deliveryId,
    [WEBHOOK_HEADERS.timestamp]: timestamp,
    [WEBHOOK_HEADERS.signature]: signature,
  };
}

/** Case-insensitive lookup; repeated headers (string[] or differently-cased keys) are joined with ','. */
function readHeader(headers: WebhookHeadersInput, name: string): string | undefined {
  // Duck-typed rather than instanceof: a Headers from another realm or fetch implementation still works.
  if (typeof (headers as Headers).get === 'function') {
    return (headers as Headers).get(name) ?? undefined;
  }
  const parts: string[] = [];
  for (const [key, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (key.toLowerCase() !== name || value === undefined) continue;
    if (Array.isArray(value)) parts.push(...value);
    else parts.push(value);
  }
  return parts.length > 0 ? parts.join(',') : undefined;
}

function requireHeader(headers: WebhookHeadersInput, name: string): string {
  const value = readHeader(headers, name)?.trim();
  if (!value) throw new WebhookVerificationError('missing_header', `missing header ${name}`);
  return value;
}

/** The well-formed v1 values of a signature header; other version tags are skipped, not rejected. */
function presentedV1Signatures(header: string): Uint8Array<ArrayBuffer>[] {
  const entries = header.split(',').map((e) => e.trim()).filter((e) => e !== '');
  if (entries.length > MAX_SIGNATURE_VALUES) {
    throw new WebhookVerificationError(
      'bad_signature_format',
      `signature header carries more than ${MAX_SIGNATURE_VALUES} values`,
    );
  }
  const out: Uint8Array<ArrayBuffer>[] = [];
  for (const entry of entries) {
    const eq = entry.indexOf('=');
    if (eq < 0 || entry.slice(0, eq).trim() !== SIGNATURE_VERSION) continue;
    const bytes = hexToBytes(entry.slice(eq + 1).trim());
    if (bytes && bytes.length === 32) out.push(bytes);
  }
  if (out.length === 0) {
    throw new WebhookVerificationError('bad_signature_format', 'signature header has no well-formed v1=<hex> value');
  }
  return out;
}

/**
 * Verify a delivery and only then parse its body.
 *
 * Pass the raw request bytes as received (a string only if it was decoded from those bytes without loss:
 * it is re-encoded as UTF-8). `secrets` are the live secrets; during a rotation overlap pass both.
 * Accepts when any presented v1 value matches any secret.
 *
 * The comparison is `crypto.subtle.verify('HMAC', ...)`: it recomputes the MAC and compares inside the
 * platform's native crypto, which uses a constant-time compare in every runtime we target (Node and
 * edge workers: BoringSSL/OpenSSL CRYPTO_memcmp; Deno: ring's constant-time verify; Chromium: BoringSSL;
 * Firefox: NSS_SecureMemcmp; WebKit: constantTimeEquals). That is preferred to comparing in JavaScript,
 * where a JIT gives no timing promise, and the expected MAC never reaches JavaScript memory.
 */
export async function verifyWebhook(
  rawBody: Uint8Array | string,
  headers: WebhookHeadersInput,
  secrets: string | string[],
  options: VerifyWebhookOptions = {},
): Promise<VerifiedWebhook> {
  const secretList = typeof secrets === 'string' ? [secrets] : secrets;
  if (!Array.isArray(secretList) || secretList.length === 0) {
    throw new TypeError('verifyWebhook needs at least one secret');
  }
  const tolerance = options.toleranceSeconds ?? SIGNATURE_TOLERANCE_SECONDS;
  if (!Number.isFinite(tolerance) || tolerance < 0) {
    throw new RangeError('toleranceSeconds must be a non-negative finite number');
  }

  const timestampText = requireHeader(headers, WEBHOOK_HEADERS.timestamp);
  const signature = requireHeader(headers, WEBHOOK_HEADERS.signature);
  const eventType = requireHeader(headers, WEBHOOK_HEADERS.event);
  const deliveryId = requireHeader(headers, WEBHOOK_HEADERS.delivery);

  if (!TIMESTAMP_RE.test(timestampText)) {
    throw new WebhookVerificationError('bad_timestamp', 'timestamp header is not Unix seconds as decimal digits');
  }
  const timestamp = Number(timestampText);
  // The header is whole seconds; flooring our clock the same way makes "exactly tolerance" pass.
  const nowSeconds = Math.floor((options.now ?? Date.now)() / 1000);
  if (Math.abs(nowSeconds - timestamp) > tolerance) {
    throw new WebhookVerificationError(
      'timestamp_out_of_tolerance',
      `timestamp is more than ${tolerance} seconds from the receiver's clock`,
    );
  }

  const candidates = presentedV1Signatures(signature);
  const bodyBytes = toBytes(rawBody);
  const payload = signedPayload(timestampText, bodyBytes);

  let matched = false;
  for (const secret of secretList) {
    const key = await hmacKey(secret);
    for (const candidate of candidates) {
      if (await globalThis.crypto.subtle.verify('HMAC', key, candidate, payload)) {
        matched = true;
        break;
      }
    }
    if (matched) break;
  }
  if (!matched) {
    throw new WebhookVerificationError('signature_mismatch', 'no presented v1 signature matches a live secret');
  }

  let body: unknown;
  try {
    body = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bodyBytes));
  } catch {
    throw new WebhookVerificationError('invalid_body', 'signed body is not UTF-8 JSON');
  }
  return { eventType, deliveryId, timestamp, body };
}
