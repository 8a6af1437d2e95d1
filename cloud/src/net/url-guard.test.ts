import { describe, expect, it } from 'vitest';
import { EMPTY_ALLOW_LIST, parseAllowCidrs } from './address-policy.ts';
import type { AllowList } from './address-policy.ts';
import { checkWebhookUrl } from './url-guard.ts';
import type { ResolvedAddress, Resolver, UrlRejection } from './url-guard.ts';

type Answer = ResolvedAddress[] | Error;

const v4 = (address: string): ResolvedAddress => ({ address, family: 4 });
const v6 = (address: string): ResolvedAddress => ({ address, family: 6 });

/** The only DNS these tests use. Names not listed fail like NXDOMAIN; every call is recorded. */
const DNS: Record<string, Answer> = {
  'example.com': [v4('93.184.216.34')],
  'v6.example.com': [v6('2606:2800:220:1:248:1893:25c8:1946')],
  'dual.example.com': [v4('93.184.216.34'), v6('2606:2800:220:1:248:1893:25c8:1946')],
  'mixed.example': [v4('93.184.216.34'), v4('10.0.0.5')],
  'mixed-order.example': [v4('192.168.0.7'), v4('93.184.216.34')],
  'evil.example': [v4('10.0.0.5')],
  'mapped.example': [v6('::ffff:10.0.0.1')],
  'nat64.example': [v6('64:ff9b::a9fe:a9fe')],
  'rebind.example': [v4('127.0.0.1')],
  'meta.example': [v4('169.254.169.254')],
  'ula.example': [v6('fd00::1234')],
  'two-bad.example': [v4('10.0.0.5'), v6('::1')],
  'garbage.example': [{ address: 'not-an-ip', family: 4 }],
  'lying-family.example': [{ address: '::1', family: 4 }],
  'empty.example': [],
  'broken.example': Object.assign(new Error('queryA ESERVFAIL broken.example'), { code: 'ESERVFAIL' }),
  localhost: [v4('127.0.0.1'), v6('::1')],
};

function fakeResolver(table: Record<string, Answer>): Resolver & { calls: string[] } {
  const calls: string[] = [];
  const resolve = async (hostname: string): Promise<ResolvedAddress[]> => {
    calls.push(hostname);
    const answer = table[hostname];
    if (answer === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    if (answer instanceof Error) throw answer;
    return answer;
  };
  return Object.assign(resolve, { calls });
}

interface Hostile {
  url: string;
  reason: UrlRejection;
  /** Every fragment must appear in the message (host, offending address, range, ...). */
  says: string[];
  /** IP literals and refused-before-DNS names must never reach the resolver. */
  noDns?: boolean;
}

const hostile: Hostile[] = [
  // Shape of the URL
  { url: 'not a url', reason: 'invalid_url', says: ['spaces'] },
  { url: '/relative/path', reason: 'invalid_url', says: ['absolute'] },
  { url: 'https://exa\tmple.com/', reason: 'invalid_url', says: ['control'] },
  { url: 'http://example.com/', reason: 'scheme', says: ['https', 'http'] },
  { url: 'ftp://example.com/', reason: 'scheme', says: ['ftp'] },
  { url: 'HTTP://example.com:443/', reason: 'scheme', says: ['http'] },
  { url: 'https://user:pw@example.com/', reason: 'credentials', says: ['credentials'] },
  { url: 'https://user@example.com/', reason: 'credentials', says: ['credentials'] },
  { url: 'https://:@example.com/', reason: 'credentials', says: ['credentials'] },
  { url: 'https://example.com/#x', reason: 'fragment', says: ['fragment'] },
  { url: 'https://example.com/#', reason: 'fragment', says: ['fragment'] },
  { url: 'https://example.com:80/', reason: 'port', says: ['80', '443'] },
  { url: 'https://example.com:22/', reason: 'port', says: ['22'] },
  { url: 'https://example.com:1023/', reason: 'port', says: ['1023'] },
  { url: 'https://example.com:0/', reason: 'port', says: ['port 0'] },
  // IPv4 literals, including the spellings the URL parser normalises
  { url: 'https://2130706433/', reason: 'forbidden_address', says: ['127.0.0.1', '"2130706433"', 'loopback'], noDns: true },
  { url: 'https://0x7f000001/', reason: 'forbidden_address', says: ['127.0.0.1', '0x7f000001', 'loopback'], noDns: true },
  { url: 'https://017700000001/', reason: 'forbidden_address', says: ['127.0.0.1', '017700000001', 'loopback'], noDns: true },
  { url: 'https://127.1/', reason: 'forbidden_address', says: ['127.0.0.1', 'loopback'], noDns: true },
  { url: 'https://0x7f.1/', reason: 'forbidden_address', says: ['127.0.0.1', 'loopback'], noDns: true },
  { url: 'https://127.0.0.1:8443/', reason: 'forbidden_address', says: ['127.0.0.1', 'loopback'], noDns: true },
  { url: 'https://169.254.169.254/', reason: 'forbidden_address', says: ['169.254.169.254', 'link-local'], noDns: true },
  { url: 'https://100.64.0.1/', reason: 'forbidden_address', says: ['100.64.0.1', 'carrier-grade NAT'], noDns: true },
  { url: 'https://0.0.0.0/', reason: 'forbidden_address', says: ['0.0.0.0', 'unspecified'], noDns: true },
  { url: 'https://255.255.255.255/', reason: 'forbidden_address', says: ['255.255.255.255', 'broadcast'], noDns: true },
  { url: 'https://224.0.0.251/', reason: 'forbidden_address', says: ['224.0.0.251', 'multicast'], noDns: true },
  { url: 'https://192.168.1.1/', reason: 'forbidden_address', says: ['192.168.1.1', 'private'], noDns: true },
  { url: 'https://10.1.2.3/', reason: 'forbidden_address', says: ['10.1.2.3', 'private'], noDns: true },
  { url: 'https://172.16.0.1/', reason: 'forbidden_address', says: ['172.16.0.1', 'private'], noDns: true },
  { url: 'https://172.31.255.255/', reason: 'forbidden_address', says: ['172.31.255.255', 'private'], noDns: true },
  { url: 'https://198.18.0.1/', reason: 'forbidden_address', says: ['198.18.0.1', 'reserved'], noDns: true },
  { url: 'https://192.0.2.10/', reason: 'forbidden_address', says: ['192.0.2.10', 'reserved'], noDns: true },
  // IPv6 literals
  { url: 'https://[::1]/', reason: 'forbidden_address', says: ['::1', 'loopback'], noDns: true },
  { url: 'https://[::]/', reason: 'forbidden_address', says: ['"[::]"', 'unspecified'], noDns: true },
  { url: 'https://[fe80::1]/', reason: 'forbidden_address', says: ['fe80::1', 'link-local'], noDns: true },
  { url: 'https://[fc00::1]/', reason: 'forbidden_address', says: ['fc00::1', 'unique local'], noDns: true },
  { url: 'https://[ff02::1]/', reason: 'forbidden_address', says: ['ff02::1', 'multicast'], noDns: true },
  { url: 'https://[2001:db8::1]/', reason: 'forbidden_address', says: ['2001:db8::1', 'reserved'], noDns: true },
  { url: 'https://[fec0::1]/', reason: 'forbidden_address', says: ['fec0::1', 'site-local'], noDns: true },
  { url: 'https://[::ffff:127.0.0.1]/', reason: 'forbidden_address', says: ['::ffff:7f00:1', 'embeds 127.0.0.1', 'loopback'], noDns: true },
  { url: 'https://[::ffff:a9fe:a9fe]/', reason: 'forbidden_address', says: ['embeds 169.254.169.254', 'link-local'], noDns: true },
  { url: 'https://[::127.0.0.1]/', reason: 'forbidden_address', says: ['embeds 127.0.0.1', 'loopback'], noDns: true },
  { url: 'https://[64:ff9b::7f00:1]/', reason: 'forbidden_address', says: ['64:ff9b::7f00:1', 'embeds 127.0.0.1', 'loopback'], noDns: true },
  { url: 'https://[64:ff9b:1::808:808]/', reason: 'forbidden_address', says: ['64:ff9b:1::808:808', 'local-use NAT64'], noDns: true },
  { url: 'https://[2002:7f00:1::]/', reason: 'forbidden_address', says: ['2002:7f00:1::', 'embeds 127.0.0.1', 'loopback'], noDns: true },
  { url: 'https://[2002:a00:1::1]/', reason: 'forbidden_address', says: ['embeds 10.0.0.1', 'private'], noDns: true },
  // Teredo: server 65.54.227.120, client 127.0.0.1 (0x80fffffe = ~0x7f000001)
  { url: 'https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/', reason: 'forbidden_address', says: ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'embeds 127.0.0.1', 'loopback'], noDns: true },
  // ISATAP interface ids under a global prefix
  { url: 'https://[2607:f8b0:4005::5efe:a00:1]/', reason: 'forbidden_address', says: ['embeds 10.0.0.1', 'private'], noDns: true },
  { url: 'https://[2607:f8b0:4005::200:5efe:7f00:1]/', reason: 'forbidden_address', says: ['embeds 127.0.0.1', 'loopback'], noDns: true },
  // Names: every address is checked, any forbidden one refuses
  { url: 'https://mixed.example/', reason: 'forbidden_address', says: ['"mixed.example"', '10.0.0.5', 'private'] },
  { url: 'https://mixed-order.example/', reason: 'forbidden_address', says: ['"mixed-order.example"', '192.168.0.7', 'private'] },
  { url: 'https://evil.example/hook', reason: 'forbidden_address', says: ['webhook host "evil.example" resolves to 10.0.0.5, which is a private address'] },
  { url: 'https://mapped.example/', reason: 'forbidden_address', says: ['"mapped.example"', '::ffff:10.0.0.1', 'embeds 10.0.0.1', 'private'] },
  { url: 'https://nat64.example/', reason: 'forbidden_address', says: ['"nat64.example"', '64:ff9b::a9fe:a9fe', 'embeds 169.254.169.254'] },
  { url: 'https://rebind.example/', reason: 'forbidden_address', says: ['"rebind.example"', '127.0.0.1', 'loopback'] },
  { url: 'https://meta.example/', reason: 'forbidden_address', says: ['"meta.example"', '169.254.169.254', 'link-local'] },
  { url: 'https://ula.example/', reason: 'forbidden_address', says: ['"ula.example"', 'fd00::1234', 'unique local'] },
  { url: 'https://two-bad.example/', reason: 'forbidden_address', says: ['10.0.0.5, which is a private address', '::1, which is a loopback address'] },
  { url: 'https://garbage.example/', reason: 'forbidden_address', says: ['"garbage.example"', 'not-an-ip', 'not a valid IP address'] },
  { url: 'https://lying-family.example/', reason: 'forbidden_address', says: ['::1', 'loopback'] },
  { url: 'https://broken.example/', reason: 'unresolvable', says: ['"broken.example"', 'could not be resolved', 'ESERVFAIL'] },
  { url: 'https://nxdomain.example/', reason: 'unresolvable', says: ['"nxdomain.example"', 'ENOTFOUND'] },
  { url: 'https://empty.example/', reason: 'unresolvable', says: ['"empty.example"', 'did not resolve to any address'] },
  // localhost is loopback by definition (RFC 6761): refused before DNS
  { url: 'https://localhost/', reason: 'forbidden_address', says: ['"localhost"', '127.0.0.1', 'loopback'], noDns: true },
  { url: 'https://LOCALHOST.:8443/', reason: 'forbidden_address', says: ['"localhost."', 'loopback'], noDns: true },
  { url: 'https://api.localhost/', reason: 'forbidden_address', says: ['"api.localhost"', 'loopback'], noDns: true },
];

describe('checkWebhookUrl refuses hostile URLs', () => {
  it('has a table big enough to mean something', () => {
    expect(hostile.length).toBeGreaterThanOrEqual(35);
  });

  it.each(hostile)('$url → $reason', async ({ url, reason, says, noDns }) => {
    const resolve = fakeResolver(DNS);
    const result = await checkWebhookUrl(url, { resolve, allow: EMPTY_ALLOW_LIST });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.reason).toBe(reason);
    for (const fragment of says) expect(result.message).toContain(fragment);
    if (noDns === true) expect(resolve.calls).toEqual([]);
  });
});

interface Good {
  url: string;
  addresses: ResolvedAddress[];
  hostname: string;
}

const good: Good[] = [
  { url: 'https://example.com/', hostname: 'example.com', addresses: [v4('93.184.216.34')] },
  { url: 'https://example.com:443/hooks?x=1', hostname: 'example.com', addresses: [v4('93.184.216.34')] },
  { url: 'https://example.com:1024/', hostname: 'example.com', addresses: [v4('93.184.216.34')] },
  { url: 'https://example.com:8443/', hostname: 'example.com', addresses: [v4('93.184.216.34')] },
  { url: 'https://EXAMPLE.com/', hostname: 'example.com', addresses: [v4('93.184.216.34')] },
  { url: 'https://v6.example.com/', hostname: 'v6.example.com', addresses: [v6('2606:2800:220:1:248:1893:25c8:1946')] },
  {
    url: 'https://dual.example.com/',
    hostname: 'dual.example.com',
    addresses: [v4('93.184.216.34'), v6('2606:2800:220:1:248:1893:25c8:1946')],
  },
  { url: 'https://93.184.216.34/', hostname: '93.184.216.34', addresses: [v4('93.184.216.34')] },
  {
    url: 'https://[2606:2800:220:1:248:1893:25c8:1946]:8443/',
    hostname: '2606:2800:220:1:248:1893:25c8:1946',
    addresses: [v6('2606:2800:220:1:248:1893:25c8:1946')],
  },
];

describe('checkWebhookUrl accepts good URLs', () => {
  it.each(good)('$url', async ({ url, hostname, addresses }) => {
    const result = await checkWebhookUrl(url, { resolve: fakeResolver(DNS), allow: EMPTY_ALLOW_LIST });
    expect(result).toMatchObject({ ok: true, hostname, addresses });
    if (result.ok) expect(result.url).toBeInstanceOf(URL);
  });

  it('resolves the bare name without brackets or port and passes nothing else', async () => {
    const resolve = fakeResolver(DNS);
    await checkWebhookUrl('https://example.com:8443/a/b?c=d', { resolve, allow: EMPTY_ALLOW_LIST });
    expect(resolve.calls).toEqual(['example.com']);
  });
});

describe('checkWebhookUrl with an allow list', () => {
  const loopback: AllowList = parseAllowCidrs('127.0.0.1/32');

  it('lets localhost through when the resolver answers 127.0.0.1 only', async () => {
    const resolve = fakeResolver({ localhost: [v4('127.0.0.1')] });
    const result = await checkWebhookUrl('https://localhost:8443/', { resolve, allow: loopback });
    expect(result).toMatchObject({ ok: true, hostname: 'localhost', addresses: [v4('127.0.0.1')] });
    expect(resolve.calls).toEqual(['localhost']);
  });

  it('still refuses localhost when it also resolves to 10.0.0.1', async () => {
    const resolve = fakeResolver({ localhost: [v4('127.0.0.1'), v4('10.0.0.1')] });
    const result = await checkWebhookUrl('https://localhost:8443/', { resolve, allow: loopback });
    expect(result).toMatchObject({ ok: false, reason: 'forbidden_address' });
    if (!result.ok) {
      expect(result.message).toContain('"localhost"');
      expect(result.message).toContain('10.0.0.1, which is a private address');
      expect(result.message).not.toContain('127.0.0.1');
      expect(result.forbidden).toEqual([{ address: '10.0.0.1', range: 'private' }]);
    }
  });

  it('refuses ::1 from localhost when only the IPv4 loopback is listed', async () => {
    const result = await checkWebhookUrl('https://localhost:8443/', { resolve: fakeResolver(DNS), allow: loopback });
    expect(result).toMatchObject({ ok: false, reason: 'forbidden_address' });
    if (!result.ok) expect(result.message).toContain('::1, which is a loopback address');
  });

  it('lets an allowed IP literal through without DNS, and not its neighbour', async () => {
    const resolve = fakeResolver({});
    const yes = await checkWebhookUrl('https://127.0.0.1:8443/', { resolve, allow: loopback });
    expect(yes).toMatchObject({ ok: true, addresses: [v4('127.0.0.1')] });
    const no = await checkWebhookUrl('https://127.0.0.2:8443/', { resolve, allow: loopback });
    expect(no).toMatchObject({ ok: false, reason: 'forbidden_address' });
    expect(resolve.calls).toEqual([]);
  });

  it('does not relax the other rules', async () => {
    const resolve = fakeResolver({ localhost: [v4('127.0.0.1')] });
    const result = await checkWebhookUrl('https://localhost:80/', { resolve, allow: loopback });
    expect(result).toMatchObject({ ok: false, reason: 'port' });
  });
});
