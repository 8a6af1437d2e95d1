import { base64UrlLength } from './encoding.ts';
import { randomToken } from './random.ts';

/** One kind of secret the service issues: a fixed prefix, then random bytes in base64url. */
export interface TokenFormat {
  /** A fresh one from the platform CSPRNG. */
  generate(): string;
  /** Exact shape check (prefix, alphabet, length): cheap enough to refuse garbage before any lookup. */
  matches(s: unknown): s is string;
}

export function tokenFormat(prefix: string, bytes: number): TokenFormat {
  const shape = new RegExp(`^${prefix}[A-Za-z0-9_-]{${base64UrlLength(bytes)}}$`);
  return {
    generate: () => randomToken(prefix, bytes),
    matches: (s: unknown): s is string => typeof s === 'string' && shape.test(s),
  };
}
