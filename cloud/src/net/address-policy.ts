import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Which IP addresses a webhook may be delivered to.
 *
 * Default: public unicast only (ipaddr.js `range() === 'unicast'`), plus whatever the operator lists in
 * SORTIE_WEBHOOK_ALLOW_CIDRS. Our rule is Hook0's: an address is judged together with every IPv4 address
 * embedded in it, and any forbidden part forbids the whole address.
 *
 * IPv6 forms that carry an IPv4 address (and what we decided for each):
 * - IPv4-mapped `::ffff:a.b.c.d` and IPv4-translated `::ffff:0:a.b.c.d` (RFC 6145): the socket really
 *   talks to the IPv4 address, so the verdict is the embedded address's verdict.
 * - NAT64 well-known prefix `64:ff9b::/96` (RFC 6052), 6to4 `2002::/16` (v4 in bits 16-47) and Teredo
 *   `2001::/32` (server v4 in bits 32-63, client v4 = last 32 bits XOR 0xffffffff): these are routable
 *   transition forms, so they are allowed exactly when every embedded v4 is allowed. For Teredo both the
 *   server and the client address are judged.
 * - NAT64 local-use prefix `64:ff9b:1::/48` (RFC 8215): the operator picks where the v4 sits inside it
 *   (/48, /56, /64 or /96 layouts), so it cannot be decoded reliably and it always points at a
 *   network-local translator. Forbidden (`nat64LocalUse`) unless the allow list covers it.
 * - IPv4-compatible `::a.b.c.d` (deprecated by RFC 4291): the embedded v4 is judged for the message,
 *   and the address is forbidden (`ipv4Compatible`) even when the v4 is public.
 * - ISATAP interface id `::0:5efe:a.b.c.d` / `::200:5efe:a.b.c.d` (RFC 5214) under any prefix: the
 *   embedded v4 is judged in addition to the prefix itself.
 *
 * ipaddr.js answers `unicast` for every IPv6 address outside its special list, including unassigned
 * space such as `::5` or `4000::1`; we only treat IPv6 as public inside global unicast `2000::/3`.
 * Its IPv4 list already covers 0.0.0.0/8, 192.0.0.0/24, 198.18.0.0/15, the three TEST-NETs, 240.0.0.0/4
 * and 255.255.255.255 (pinned by tests), so no IPv4 ranges are added here.
 */

type IPv4 = ipaddr.IPv4;
type IPv6 = ipaddr.IPv6;
type IP = IPv4 | IPv6;

/** The environment variable whose value `parseAllowCidrs` reads. */
export const ALLOW_CIDRS_ENV = 'SORTIE_WEBHOOK_ALLOW_CIDRS';

export interface AllowEntry {
  /** The entry as written, normalised (single addresses become /32 or /128). */
  readonly cidr: string;
  readonly network: IP;
  readonly prefixLength: number;
}

export interface AllowList {
  readonly entries: readonly AllowEntry[];
}

/** The production default: nothing private is allowed. */
export const EMPTY_ALLOW_LIST: AllowList = Object.freeze({ entries: Object.freeze([]) });

export type AddressVerdict =
  | { allowed: true }
  | {
      allowed: false;
      /** ipaddr.js range name (`private`, `loopback`, `linkLocal`, ...) or one of ours (`nat64LocalUse`, `ipv4Compatible`, `invalid`). */
      range: string;
      /** The unwrapped IPv4 address when the forbidden part was embedded in an IPv6 form. */
      embedded?: string;
    };

/**
 * Parse a comma- and/or whitespace-separated list of CIDRs or single addresses. An empty string gives
 * the empty list. IPv4 must be written in four-part decimal: ipaddr.js alone would read `10/8` as
 * `0.0.0.10/8`, which silently means something else. Host bits must be zero, so a typo such as
 * `10.0.0.1/8` cannot widen what the operator thought they allowed without them noticing.
 */
export function parseAllowCidrs(list: string): AllowList {
  const entries: AllowEntry[] = [];
  for (const raw of list.split(/[\s,]+/)) {
    if (raw === '') continue;
    entries.push(parseAllowEntry(raw));
  }
  return Object.freeze({ entries: Object.freeze(entries) });
}

function parseAllowEntry(raw: string): AllowEntry {
  const bad = (why: string): Error => new Error(`${ALLOW_CIDRS_ENV}: invalid entry "${raw}": ${why}`);
  const slash = raw.indexOf('/');
  const addressPart = slash === -1 ? raw : raw.slice(0, slash);
  if (addressPart.includes('%')) throw bad('IPv6 zone ids are not allowed');
  const network = parseStrictAddress(addressPart);
  if (network === null) {
    throw bad('expected an IPv4 address in dotted-decimal form or an IPv6 address, optionally followed by /prefix');
  }
  const maxBits = network.kind() === 'ipv4' ? 32 : 128;
  let prefixLength = maxBits;
  if (slash !== -1) {
    const prefixText = raw.slice(slash + 1);
    if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > maxBits) {
      throw bad(`prefix length must be a whole number from 0 to ${maxBits}`);
    }
    prefixLength = Number(prefixText);
    const cidr = `${network.toString()}/${prefixLength}`;
    const networkAddress =
      network.kind() === 'ipv4'
        ? ipaddr.IPv4.networkAddressFromCIDR(cidr)
        : ipaddr.IPv6.networkAddressFromCIDR(cidr);
    if (networkAddress.toString() !== network.toString()) {
      throw bad(`host bits are set; did you mean ${networkAddress.toString()}/${prefixLength}?`);
    }
  }
  return Object.freeze({ cidr: `${network.toString()}/${prefixLength}`, network, prefixLength });
}

/**
 * Accepts exactly what `net.connect` treats as an address literal (`net.isIP`), optionally bracketed.
 * Legacy IPv4 spellings (`127.1`, `0x7f000001`) are refused rather than normalised, so what is checked
 * is never a different string from what is connected to. The zone id of a scoped IPv6 address does not
 * change its range and is dropped.
 */
function parseStrictAddress(text: string): IP | null {
  const t = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const family = isIP(t);
  if (family === 4) return ipaddr.IPv4.parse(t);
  if (family !== 6) return null;
  const percent = t.indexOf('%');
  const bare = percent === -1 ? t : t.slice(0, percent);
  // ipaddr.js reads the deprecated `::a.b.c.d` as `::ffff:a.b.c.d`, a different address from the
  // IPv4-compatible one the socket would use; the WHATWG host parser spells dotted tails faithfully.
  const canonical = bare.includes('.') ? new URL(`http://[${bare}]/`).hostname.slice(1, -1) : bare;
  return ipaddr.IPv6.parse(canonical);
}

function isAllowListed(address: IP, allow: AllowList): boolean {
  for (const entry of allow.entries) {
    if (entry.network.kind() === address.kind() && address.match(entry.network, entry.prefixLength)) return true;
  }
  return false;
}

function v4FromParts(high: number, low: number): IPv4 {
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}

const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR('2000::/3');
const NAT64_WELL_KNOWN = ipaddr.IPv6.parseCIDR('64:ff9b::/96');

/** Ranges whose meaning is "the embedded IPv4 address": judged by what they embed, not by themselves. */
const TRANSPARENT_V6_RANGES = new Set(['ipv4Mapped', 'rfc6145', '6to4', 'teredo']);

function isIPv4Compatible(p: readonly number[]): boolean {
  // ::/96 except :: and ::1, which ipaddr.js already names unspecified and loopback.
  return p[0] === 0 && p[1] === 0 && p[2] === 0 && p[3] === 0 && p[4] === 0 && p[5] === 0 && (p[6] !== 0 || (p[7] ?? 0) > 1);
}

function isIsatapInterfaceId(p: readonly number[]): boolean {
  // RFC 5214: 00-00-5E-FE or 02-00-5E-FE (the u bit); the g bit is tolerated so it cannot be used to dodge the check.
  return ((p[4] ?? 0) & ~0x0300) === 0 && p[5] === 0x5efe;
}

/** Every IPv4 address an IPv6 address carries, in the order they are judged. */
function embeddedIPv4(address: IPv6): IPv4[] {
  const p = address.parts;
  const part = (i: number): number => p[i] ?? 0;
  const found: IPv4[] = [];
  switch (address.range()) {
    case 'ipv4Mapped':
    case 'rfc6145':
      found.push(v4FromParts(part(6), part(7)));
      break;
    case 'rfc6052':
      if (address.match(NAT64_WELL_KNOWN)) found.push(v4FromParts(part(6), part(7)));
      break;
    case '6to4':
      found.push(v4FromParts(part(1), part(2)));
      break;
    case 'teredo':
      found.push(v4FromParts(part(6) ^ 0xffff, part(7) ^ 0xffff)); // client: the destination
      found.push(v4FromParts(part(2), part(3))); // server
      break;
    default:
      if (isIPv4Compatible(p)) found.push(v4FromParts(part(6), part(7)));
  }
  if (isIsatapInterfaceId(p)) found.push(v4FromParts(part(6), part(7)));
  return found;
}

function judgeIPv4(address: IPv4, allow: AllowList): string | null {
  if (isAllowListed(address, allow)) return null;
  const range = address.range();
  return range === 'unicast' ? null : range;
}

/** The verdict on the IPv6 address itself, once everything it embeds has passed. */
function judgeIPv6Outer(address: IPv6): string | null {
  const range: string = address.range();
  if (TRANSPARENT_V6_RANGES.has(range)) return null;
  if (range === 'rfc6052') return address.match(NAT64_WELL_KNOWN) ? null : 'nat64LocalUse';
  if (range !== 'unicast') return range;
  if (isIPv4Compatible(address.parts)) return 'ipv4Compatible';
  return address.match(GLOBAL_UNICAST_V6) ? null : 'reserved';
}

/**
 * Judge one address. Unparseable input is forbidden (`invalid`) rather than thrown, so a caller that
 * forgets a try/catch still fails closed. An allow-list entry covering the address itself overrides
 * everything; one covering an embedded IPv4 clears that embedded part only.
 */
export function classifyAddress(address: string, allow: AllowList): AddressVerdict {
  const parsed = parseStrictAddress(address);
  if (parsed === null) return { allowed: false, range: 'invalid' };
  if (isAllowListed(parsed, allow)) return { allowed: true };
  if (parsed.kind() === 'ipv4') {
    const range = judgeIPv4(parsed as IPv4, allow);
    return range === null ? { allowed: true } : { allowed: false, range };
  }
  const v6 = parsed as IPv6;
  for (const inner of embeddedIPv4(v6)) {
    const range = judgeIPv4(inner, allow);
    if (range !== null) return { allowed: false, range, embedded: inner.toString() };
  }
  const range = judgeIPv6Outer(v6);
  return range === null ? { allowed: true } : { allowed: false, range };
}

/** The family of a textual address as `classifyAddress` reads it, or null when it is not one. */
export function addressFamily(address: string): 4 | 6 | null {
  const parsed = parseStrictAddress(address);
  if (parsed === null) return null;
  return parsed.kind() === 'ipv4' ? 4 : 6;
}

const RANGE_PHRASES: Record<string, string> = {
  private: 'a private address',
  loopback: 'a loopback address',
  linkLocal: 'a link-local address',
  carrierGradeNat: 'a carrier-grade NAT (CGNAT) address',
  unspecified: 'an unspecified ("this network") address',
  multicast: 'a multicast address',
  broadcast: 'the broadcast address',
  reserved: 'a reserved address',
  uniqueLocal: 'a unique local (private IPv6) address',
  deprecatedSiteLocal: 'a site-local address',
  discard: 'a discard-only address',
  benchmarking: 'a benchmarking address',
  amt: 'an AMT relay anycast address',
  as112: 'an AS112 sink address',
  as112v6: 'an AS112 sink address',
  deprecatedOrchid: 'an ORCHID (non-routable) address',
  orchid2: 'an ORCHID (non-routable) address',
  droneRemoteIdProtocolEntityTags: 'a DRIP entity tag (non-routable) address',
  segmentRouting: 'a segment routing SID address',
  nat64LocalUse: 'a local-use NAT64 address',
  ipv4Compatible: 'a deprecated IPv4-compatible IPv6 address',
  invalid: 'not a valid IP address',
};

/** A phrase for messages, e.g. `describeRange('private')` gives "a private address". */
export function describeRange(range: string): string {
  return RANGE_PHRASES[range] ?? `a ${range} address`;
}
