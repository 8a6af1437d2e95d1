import { lookup } from 'node:dns/promises';
import { addressFamily, classifyAddress, describeRange } from './address-policy.ts';
import type { AllowList } from './address-policy.ts';

/**
 * The webhook URL rules of the spec ("checked before writing and again immediately before every
 * delivery"). The same function serves both moments: registration calls it once, each delivery attempt
 * calls it again with fresh DNS and then connects only to the addresses it returned (see
 * pinned-lookup.ts), so a DNS answer that changes between check and connect is never trusted.
 */

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

/**
 * getaddrinfo through node:dns, the same path `net.connect` would take (so /etc/hosts counts).
 * `order: 'verbatim'` is the non-deprecated spelling of `verbatim: true`; the order only matters for
 * which address is tried first, since every address is checked.
 */
export const systemResolver: Resolver = async (hostname) => {
  const answers = await lookup(hostname, { all: true, order: 'verbatim' });
  return answers.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));
};

export type UrlRejection =
  | 'invalid_url'
  | 'scheme'
  | 'credentials'
  | 'fragment'
  | 'port'
  | 'forbidden_address'
  | 'unresolvable';

export interface ForbiddenAddress {
  address: string;
  range: string;
  embedded?: string;
}

export type UrlCheck =
  | { ok: true; url: URL; hostname: string; addresses: ResolvedAddress[] }
  | {
      ok: false;
      reason: UrlRejection;
      message: string;
      /** Set for forbidden_address: every offending address, not only the one named first. */
      forbidden?: ForbiddenAddress[];
    };

export interface UrlCheckOptions {
  resolve: Resolver;
  allow: AllowList;
}

const HTTPS_PORT = 443;
const FIRST_UNPRIVILEGED_PORT = 1024;

function reject(reason: UrlRejection, message: string, forbidden?: ForbiddenAddress[]): UrlCheck {
  return forbidden === undefined ? { ok: false, reason, message } : { ok: false, reason, message, forbidden };
}

/**
 * The authority as typed, before WHATWG normalisation: needed because the parser drops an empty
 * userinfo (`https://@host/`, `https://:@host/`) without a trace. Backslashes count as slashes, as
 * they do for special schemes.
 */
function rawAuthority(raw: string): string {
  const m = /^[A-Za-z][A-Za-z0-9+.-]*:[\\/]*([^\\/?#]*)/.exec(raw);
  return m?.[1] ?? '';
}

/** The host as typed (for messages only), e.g. `2130706433` for a URL the parser turned into 127.0.0.1. */
function rawHost(authority: string): string {
  const hostPort = authority.slice(authority.lastIndexOf('@') + 1);
  if (hostPort.startsWith('[')) return hostPort.slice(0, hostPort.indexOf(']') + 1);
  const colon = hostPort.indexOf(':');
  return colon === -1 ? hostPort : hostPort.slice(0, colon);
}

function forbiddenPhrase(f: ForbiddenAddress): string {
  return f.embedded === undefined
    ? `${f.address}, which is ${describeRange(f.range)}`
    : `${f.address}, which embeds ${f.embedded}, ${describeRange(f.range)}`;
}

/** RFC 6761 §6.3: these names are loopback by definition, whatever a resolver says. */
function isLocalhostName(hostname: string): boolean {
  const name = hostname.endsWith('.') ? hostname.slice(0, -1) : hostname;
  return name === 'localhost' || name.endsWith('.localhost');
}

export async function checkWebhookUrl(raw: string, opts: UrlCheckOptions): Promise<UrlCheck> {
  // WHATWG silently strips surrounding spaces/controls and deletes tabs and newlines anywhere, so the
  // text someone registered could differ from the URL actually checked; refuse instead of guessing.
  if (/[\u0000-\u0020\u007f]/.test(raw)) {
    return reject('invalid_url', 'webhook URL must not contain spaces or control characters');
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return reject('invalid_url', 'webhook URL is not a valid absolute URL');
  }

  if (url.protocol !== 'https:') {
    return reject('scheme', `webhook URL scheme must be https, not ${url.protocol.slice(0, -1)}`);
  }

  const authority = rawAuthority(raw);
  if (url.username !== '' || url.password !== '' || authority.includes('@')) {
    return reject('credentials', 'webhook URL must not contain credentials (user:password@)');
  }

  // Any '#' in a parseable URL starts the fragment, so this also catches the empty fragment that
  // `url.hash` reports as ''.
  if (raw.includes('#')) {
    return reject('fragment', 'webhook URL must not contain a fragment (#...)');
  }

  // WHATWG reports the default port (an explicit :443 included) as ''.
  if (url.port !== '') {
    const port = Number(url.port);
    if (port < FIRST_UNPRIVILEGED_PORT && port !== HTTPS_PORT) {
      return reject('port', `webhook URL port ${port} is not allowed: a port below 1024 must be 443`);
    }
  }

  const hostname = url.hostname;
  const written = rawHost(authority);
  const hostLabel =
    written !== '' && written.toLowerCase() !== hostname ? `"${hostname}" (written "${written}")` : `"${hostname}"`;

  // IP literals: the parser has already turned decimal/octal/hex IPv4 spellings into dotted decimal,
  // and IPv6 comes bracketed. Neither goes anywhere near DNS.
  const literal = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  const literalFamily = addressFamily(literal);
  if (literalFamily !== null) {
    const verdict = classifyAddress(literal, opts.allow);
    if (!verdict.allowed) {
      const f: ForbiddenAddress = { address: literal, range: verdict.range };
      if (verdict.embedded !== undefined) f.embedded = verdict.embedded;
      return reject('forbidden_address', `webhook host ${hostLabel} is the address ${forbiddenPhrase(f)}`, [f]);
    }
    return { ok: true, url, hostname: literal, addresses: [{ address: literal, family: literalFamily }] };
  }

  // Refused without asking DNS unless the operator allow-listed loopback (tests, labs); then the
  // resolver's answers are checked like any other name's, every one of them.
  if (isLocalhostName(hostname)) {
    const v4 = classifyAddress('127.0.0.1', opts.allow);
    const v6 = classifyAddress('::1', opts.allow);
    if (!v4.allowed && !v6.allowed) {
      return reject(
        'forbidden_address',
        `webhook host ${hostLabel} is a loopback name and resolves to 127.0.0.1 or ::1, which is ${describeRange('loopback')}`,
        [{ address: '127.0.0.1', range: 'loopback' }],
      );
    }
  }

  let answers: ResolvedAddress[];
  try {
    answers = await opts.resolve(hostname);
  } catch (err) {
    const detail = err instanceof Error ? ((err as NodeJS.ErrnoException).code ?? err.message) : String(err);
    return reject('unresolvable', `webhook host ${hostLabel} could not be resolved (${detail})`);
  }
  if (!Array.isArray(answers) || answers.length === 0) {
    return reject('unresolvable', `webhook host ${hostLabel} did not resolve to any address`);
  }

  const forbidden: ForbiddenAddress[] = [];
  const addresses: ResolvedAddress[] = [];
  for (const answer of answers) {
    const address = String(answer?.address);
    const verdict = classifyAddress(address, opts.allow);
    if (!verdict.allowed) {
      const f: ForbiddenAddress = { address, range: verdict.range };
      if (verdict.embedded !== undefined) f.embedded = verdict.embedded;
      forbidden.push(f);
      continue;
    }
    // The family is taken from the address itself, not from what the resolver claimed.
    const family = addressFamily(address);
    if (family !== null) addresses.push({ address, family });
  }
  if (forbidden.length > 0) {
    const phrases = forbidden.map(forbiddenPhrase).join('; and to ');
    return reject('forbidden_address', `webhook host ${hostLabel} resolves to ${phrases}`, forbidden);
  }
  return { ok: true, url, hostname, addresses };
}
