import { base64UrlEncode, bytesToHex, toBytes } from './encoding.ts';

/** Web Crypto's getRandomValues refuses more than 65536 bytes per call. */
const MAX_RANDOM_BYTES = 65_536;

/**
 * `prefix` followed by `bytes` bytes from the platform CSPRNG, base64url without padding.
 * The prefix makes a leaked token recognisable (secret scanners, logs) and tells token kinds apart.
 */
export function randomToken(prefix: string, bytes = 32): string {
  if (!Number.isInteger(bytes) || bytes < 1 || bytes > MAX_RANDOM_BYTES) {
    throw new RangeError(`randomToken: bytes must be an integer from 1 to ${MAX_RANDOM_BYTES}`);
  }
  const buf = new Uint8Array(bytes);
  globalThis.crypto.getRandomValues(buf);
  return prefix + base64UrlEncode(buf);
}

/** Lowercase hex SHA-256 of the UTF-8 bytes of `text` (or of the given bytes). */
export async function sha256Hex(text: string | Uint8Array): Promise<string> {
  const digest = await globalThis.crypto.subtle.digest('SHA-256', toBytes(text));
  return bytesToHex(new Uint8Array(digest));
}
