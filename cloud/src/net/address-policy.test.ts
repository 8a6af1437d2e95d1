import { describe, expect, it } from 'vitest';
import { EMPTY_ALLOW_LIST, addressFamily, classifyAddress, describeRange, parseAllowCidrs } from './address-policy.ts';

const none = EMPTY_ALLOW_LIST;

describe('classifyAddress, IPv4', () => {
  // Every special range the brief names, including the ones we rely on ipaddr.js for, so an upgrade
  // that reclassifies one of them fails here.
  const forbidden: Array<[string, string]> = [
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['169.254.169.254', 'linkLocal'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['100.127.255.255', 'carrierGradeNat'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['192.0.0.8', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['198.19.255.255', 'reserved'],
    ['198.51.100.7', 'reserved'],
    ['203.0.113.9', 'reserved'],
    ['240.0.0.1', 'reserved'],
    ['192.88.99.1', 'reserved'],
  ];
  it.each(forbidden)('%s is forbidden as %s', (address, range) => {
    expect(classifyAddress(address, none)).toEqual({ allowed: false, range });
  });

  it.each(['93.184.216.34', '8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '11.0.0.1'])('%s is public', (a) => {
    expect(classifyAddress(a, none)).toEqual({ allowed: true });
  });

  it('refuses legacy IPv4 spellings instead of normalising them', () => {
    for (const a of ['127.1', '2130706433', '0x7f000001', '017700000001', '127.0.0.01', ' 1.2.3.4', '::ffff:0x7f.0.0.1', '']) {
      expect(classifyAddress(a, none)).toEqual({ allowed: false, range: 'invalid' });
    }
  });
});

describe('classifyAddress, IPv6', () => {
  const forbidden: Array<[string, string, string?]> = [
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['fe80::1', 'linkLocal'],
    ['fe80::1%eth0', 'linkLocal'],
    ['fc00::1', 'uniqueLocal'],
    ['fd12:3456::1', 'uniqueLocal'],
    ['ff02::1', 'multicast'],
    ['fec0::1', 'deprecatedSiteLocal'],
    ['100::1', 'discard'],
    ['2001:db8::1', 'reserved'],
    ['2001:10::1', 'deprecatedOrchid'],
    ['2001:20::1', 'orchid2'],
    ['2001:2::1', 'benchmarking'],
    ['4000::1', 'reserved'], // outside 2000::/3, which ipaddr.js would call unicast
    ['::ffff:127.0.0.1', 'loopback', '127.0.0.1'],
    ['::ffff:10.0.0.1', 'private', '10.0.0.1'],
    ['::ffff:0:a9fe:a9fe', 'linkLocal', '169.254.169.254'], // RFC 6145 IPv4-translated
    ['64:ff9b::7f00:1', 'loopback', '127.0.0.1'],
    ['64:ff9b::a00:1', 'private', '10.0.0.1'],
    ['2002:7f00:1::', 'loopback', '127.0.0.1'],
    ['2002:c0a8:101::1', 'private', '192.168.1.1'],
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'loopback', '127.0.0.1'], // Teredo client 127.0.0.1
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'reserved', '192.0.2.45'], // RFC 4380's example client
    ['2001:0:a00:1:8000:63bf:f7f7:f7f7', 'private', '10.0.0.1'], // Teredo server private
    ['2607:f8b0:4005::5efe:a00:1', 'private', '10.0.0.1'], // ISATAP under a global prefix
    ['2607:f8b0:4005::200:5efe:7f00:1', 'loopback', '127.0.0.1'],
    ['::127.0.0.1', 'loopback', '127.0.0.1'], // IPv4-compatible
    ['::8.8.8.8', 'ipv4Compatible'], // ipaddr.js alone would read this as ::ffff:8.8.8.8
    ['0:0:0:0:0:0:808:808', 'ipv4Compatible'],
    ['64:ff9b:1::808:808', 'nat64LocalUse'],
  ];
  it.each(forbidden)('%s is forbidden as %s (embedded %s)', (address, range, embedded) => {
    const expected = embedded === undefined ? { allowed: false, range } : { allowed: false, range, embedded };
    expect(classifyAddress(address, none)).toEqual(expected);
  });

  it.each([
    '2606:2800:220:1:248:1893:25c8:1946',
    '2a00:1450:4001:80b::200e',
    '::ffff:8.8.8.8', // mapped public: the socket talks to 8.8.8.8
    '64:ff9b::808:808', // NAT64 of a public address
    '2002:808:808::1', // 6to4 of a public address
    '2001:0:4136:e378:8000:63bf:f7f7:f7f7', // Teredo, server 65.54.227.120, client 8.8.8.8
    '2607:f8b0:4005::5efe:808:808', // ISATAP with a public v4
    '[2606:2800:220:1:248:1893:25c8:1946]',
  ])('%s is allowed', (address) => {
    expect(classifyAddress(address, none)).toEqual({ allowed: true });
  });
});

describe('allow list', () => {
  it('parses commas and whitespace, single addresses and CIDRs', () => {
    const allow = parseAllowCidrs(' 127.0.0.1/32, ::1\n10.0.0.0/8 ,,fd00::/8 ');
    expect(allow.entries.map((e) => e.cidr)).toEqual(['127.0.0.1/32', '::1/128', '10.0.0.0/8', 'fd00::/8']);
  });

  it('is empty for an empty or blank value', () => {
    expect(parseAllowCidrs('').entries).toEqual([]);
    expect(parseAllowCidrs(' , ').entries).toEqual([]);
  });

  it.each([
    ['nope', /invalid entry "nope"/],
    ['10.0.0.1/33', /invalid entry "10.0.0.1\/33".*0 to 32/],
    ['::1/129', /invalid entry "::1\/129".*0 to 128/],
    ['10/8', /invalid entry "10\/8"/],
    ['127.1', /invalid entry "127.1"/],
    ['10.0.0.1/8', /invalid entry "10.0.0.1\/8".*did you mean 10.0.0.0\/8/],
    ['10.0.0.0/x', /invalid entry "10.0.0.0\/x"/],
    ['fe80::1%eth0', /invalid entry "fe80::1%eth0".*zone/],
  ])('rejects %s with a message naming it', (entry, message) => {
    expect(() => parseAllowCidrs(`127.0.0.1, ${entry}`)).toThrow(message);
    expect(() => parseAllowCidrs(entry)).toThrow(/SORTIE_WEBHOOK_ALLOW_CIDRS/);
  });

  it('lets listed addresses through and nothing else', () => {
    const allow = parseAllowCidrs('127.0.0.1/32,10.1.0.0/16,fd00::/8');
    expect(classifyAddress('127.0.0.1', allow)).toEqual({ allowed: true });
    expect(classifyAddress('127.0.0.2', allow)).toEqual({ allowed: false, range: 'loopback' });
    expect(classifyAddress('10.1.200.3', allow)).toEqual({ allowed: true });
    expect(classifyAddress('10.2.0.1', allow)).toEqual({ allowed: false, range: 'private' });
    expect(classifyAddress('fd00::5', allow)).toEqual({ allowed: true });
    expect(classifyAddress('::1', allow)).toEqual({ allowed: false, range: 'loopback' });
  });

  it('clears an embedded IPv4 when the v4 itself is listed, and only that part', () => {
    const allow = parseAllowCidrs('127.0.0.1');
    expect(classifyAddress('::ffff:127.0.0.1', allow)).toEqual({ allowed: true });
    expect(classifyAddress('2002:7f00:1::', allow)).toEqual({ allowed: true });
    // Teredo whose client is allowed but whose server is private is still refused.
    expect(classifyAddress('2001:0:a00:1:8000:63bf:80ff:fffe', allow)).toEqual({
      allowed: false,
      range: 'private',
      embedded: '10.0.0.1',
    });
    // An allowed v4 inside a link-local v6 does not make the link-local address acceptable.
    expect(classifyAddress('fe80::5efe:7f00:1', allow)).toEqual({ allowed: false, range: 'linkLocal' });
  });

  it('can open the local-use NAT64 prefix explicitly', () => {
    expect(classifyAddress('64:ff9b:1::808:808', parseAllowCidrs('64:ff9b:1::/48'))).toEqual({ allowed: true });
  });
});

describe('helpers', () => {
  it('addressFamily reads strict forms only', () => {
    expect(addressFamily('1.2.3.4')).toBe(4);
    expect(addressFamily('::1')).toBe(6);
    expect(addressFamily('[::1]')).toBe(6);
    expect(addressFamily('example.com')).toBeNull();
    expect(addressFamily('127.1')).toBeNull();
  });

  it('describeRange has phrases for the common ranges', () => {
    expect(describeRange('private')).toBe('a private address');
    expect(describeRange('carrierGradeNat')).toMatch(/carrier-grade NAT/);
    expect(describeRange('somethingNew')).toBe('a somethingNew address');
  });
});
