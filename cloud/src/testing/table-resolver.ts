import type { Resolver } from '../net/url-guard.ts';

/** DNS for tests: names answer from `hosts` (read at each lookup, so tests may change it), others ENOTFOUND. */
export function tableResolver(hosts: Record<string, string[]>): Resolver {
  return async (hostname) => {
    const answers = hosts[hostname];
    if (!answers) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', hostname });
    return answers.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
}
