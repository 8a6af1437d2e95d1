import type { LookupAddress, LookupOptions } from 'node:dns';
import type { LookupFunction } from 'node:net';

/**
 * A `lookup` for `net.connect` / `tls.connect` / undici `Agent({ connect: { lookup } })` that always
 * answers with addresses checked earlier by `checkWebhookUrl`. Without it the socket would resolve the
 * name a second time, and a DNS server that answers "public" to the check and "private" to the connect
 * (rebinding) would win. The hostname is still used for the Host header, SNI and certificate checks.
 */

export interface PinnedAddress {
  address: string;
  family: 4 | 6;
}

export interface PinnedLookupOptions {
  /**
   * When set, a lookup for any other name fails instead of being answered: the agent that carries this
   * lookup belongs to one webhook host, and nothing else may borrow its pinned addresses.
   */
  hostname?: string;
}

function lookupError(code: string, message: string, hostname: string): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException & { hostname?: string } = new Error(message);
  err.code = code;
  err.hostname = hostname;
  return err;
}

function wantedFamily(family: LookupOptions['family']): 0 | 4 | 6 {
  if (family === 4 || family === 'IPv4') return 4;
  if (family === 6 || family === 'IPv6') return 6;
  return 0;
}

function sameHost(a: string, b: string): boolean {
  const norm = (h: string): string => {
    const bare = h.startsWith('[') && h.endsWith(']') ? h.slice(1, -1) : h;
    return (bare.endsWith('.') ? bare.slice(0, -1) : bare).toLowerCase();
  };
  return norm(a) === norm(b);
}

export function createPinnedLookup(
  addresses: readonly PinnedAddress[],
  options: PinnedLookupOptions = {},
): LookupFunction {
  if (addresses.length === 0) throw new Error('createPinnedLookup needs at least one checked address');
  const pinned: readonly PinnedAddress[] = addresses.map(({ address, family }) => Object.freeze({ address, family }));
  const expected = options.hostname;

  return (hostname, lookupOptions, callback) => {
    // dns.lookup never calls back synchronously; callers (net's happy-eyeballs code among them) rely on that.
    queueMicrotask(() => {
      if (expected !== undefined && !sameHost(hostname, expected)) {
        callback(
          lookupError('ENOTFOUND', `pinned lookup for "${expected}" refused to answer for "${hostname}"`, hostname),
          '',
        );
        return;
      }
      const family = wantedFamily(lookupOptions.family);
      const matching = family === 0 ? pinned : pinned.filter((a) => a.family === family);
      if (matching.length === 0) {
        callback(
          lookupError('ENOTFOUND', `no checked IPv${family} address is pinned for "${hostname}"`, hostname),
          '',
        );
        return;
      }
      if (lookupOptions.all === true) {
        callback(null, matching.map((a): LookupAddress => ({ address: a.address, family: a.family })));
        return;
      }
      const first = matching[0] as PinnedAddress;
      callback(null, first.address, first.family);
    });
  };
}
