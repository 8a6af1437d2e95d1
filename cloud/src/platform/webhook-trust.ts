import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Db } from '../db/connect.ts';
import type { Executor } from '../db/executor.ts';
import { writeDeploymentSetting } from './deployment-settings.ts';
import { parseAllowCidrs, type AllowList } from '../net/address-policy.ts';
import type { Logger } from './logger.ts';

/**
 * What the operator trusts for webhook delivery beyond the public internet: private address ranges a
 * webhook URL may resolve into, and CA certificates a receiver's TLS may chain to besides the public roots.
 *
 * Two sources, used together. The environment (SORTIE_WEBHOOK_ALLOW_CIDRS, SORTIE_WEBHOOK_CA_FILE) is read
 * once at start-up, as every setting is. The deployment setting `webhook_trust` is written by the admin CLI
 * (`npm run admin -- webhook-trust add|clear|status`) and applied while the server runs, so trusting a
 * receiver on a laptop (`npm run receiver -- setup` prints the command) needs no restart: at once when the
 * command ran inside the embedded server (the admin CLI hands it to a running one), within POLL_MS on every
 * replica against PostgreSQL, where the admin CLI is a process of its own.
 */
export const WEBHOOK_TRUST = 'webhook_trust';

/** How often a replica on PostgreSQL reads the stored trust: one small row, so an idle process stays quiet. */
const POLL_MS = 5_000;
/** A CA bundle is a few certificates; the bound keeps a wrong file (a log, a disk image) out of the row. */
const MAX_CA_BYTES = 256 * 1024;

/** The stored part, as the admin CLI writes and shows it. */
export interface StoredTrust {
  /** Normalised CIDRs (`127.0.0.1/32`), in the order added. */
  allowCidrs: string[];
  /** PEM certificates, one each, in the order added. */
  caCertificates: string[];
}

const NONE: StoredTrust = { allowCidrs: [], caCertificates: [] };

/** Local writes (the admin command ran in this process) tell this process's trust at once. */
const localChanges = new Set<() => void>();

export async function readStoredTrust(db: Executor): Promise<StoredTrust> {
  const row = await db.selectFrom('deployment_settings').select('value').where('key', '=', WEBHOOK_TRUST).executeTakeFirst();
  const value = row?.value as Partial<StoredTrust> | undefined;
  if (!value || typeof value !== 'object') return NONE;
  return {
    allowCidrs: Array.isArray(value.allowCidrs) ? value.allowCidrs.filter((c): c is string => typeof c === 'string') : [],
    caCertificates: Array.isArray(value.caCertificates) ? value.caCertificates.filter((c): c is string => typeof c === 'string') : [],
  };
}

export async function writeStoredTrust(db: Executor, trust: StoredTrust, at: Date): Promise<void> {
  const value = JSON.stringify(trust);
  await writeDeploymentSetting(db, WEBHOOK_TRUST, value, at);
  for (const listener of localChanges) listener();
}

/** CIDRs as the environment variable takes them, normalised; a bad entry throws naming it. */
export function normaliseCidrs(list: string): string[] {
  return parseAllowCidrs(list).entries.map((e) => e.cidr);
}

/** Every certificate of a PEM bundle, each checked to be one; throws saying what is wrong. */
export function pemCertificates(pem: string): string[] {
  if (pem.length > MAX_CA_BYTES) throw new Error(`a CA file holds a few certificates, not ${pem.length} bytes`);
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw new Error('no PEM certificate (-----BEGIN CERTIFICATE-----) in the file');
  for (const block of blocks) new X509Certificate(block);
  return blocks.map((b) => `${b.trim()}\n`);
}

/** A certificate as the admin CLI shows it: enough to recognise it, never the whole PEM. */
export function describeCertificate(pem: string): { subject: string; fingerprint256: string; validTo: string } {
  const cert = new X509Certificate(pem);
  return { subject: cert.subject.replaceAll('\n', ', '), fingerprint256: cert.fingerprint256, validTo: new Date(cert.validTo).toISOString() };
}

/**
 * The trust a running server applies: the environment's and the stored, merged. `allow` and `extraCa`
 * are read on every URL check and handshake set-up, so a change applies to the next one.
 */
export class WebhookTrust {
  readonly #db: Db;
  readonly #logger: Logger;
  readonly #envCidrs: string;
  readonly #envCa: string | undefined;
  #stored: StoredTrust = NONE;
  #allow: AllowList;
  #extraCa: string | undefined;
  readonly #listeners = new Set<() => void>();
  #timer: ReturnType<typeof setInterval> | undefined;
  readonly #unsubscribe: () => void;

  private constructor(input: { db: Db; logger: Logger; envCidrs: string; envCa: string | undefined }) {
    this.#db = input.db;
    this.#logger = input.logger;
    this.#envCidrs = input.envCidrs;
    this.#envCa = input.envCa;
    this.#allow = parseAllowCidrs(input.envCidrs);
    this.#extraCa = input.envCa;
    const changed = () => void this.refresh();
    localChanges.add(changed);
    this.#unsubscribe = () => localChanges.delete(changed);
  }

  /**
   * The environment's trust (a bad SORTIE_WEBHOOK_ALLOW_CIDRS or unreadable CA file fails start-up, as
   * before), then the stored one. Polls only where another process can write it (PostgreSQL).
   */
  static async open(input: { db: Db; logger: Logger; allowCidrs: string; caFile: string | undefined; poll: boolean }): Promise<WebhookTrust> {
    parseAllowCidrs(input.allowCidrs);
    const envCa = input.caFile ? await readFile(input.caFile, 'utf8') : undefined;
    const trust = new WebhookTrust({ db: input.db, logger: input.logger, envCidrs: input.allowCidrs, envCa });
    await trust.refresh();
    if (input.poll) {
      trust.#timer = setInterval(() => void trust.refresh(), POLL_MS);
      trust.#timer.unref();
    }
    return trust;
  }

  /** Private ranges webhook URLs may resolve into: the environment's and the stored ones. */
  get allow(): AllowList {
    return this.#allow;
  }

  /** PEM certificates trusted besides the public roots, or undefined when there are none. */
  get extraCa(): string | undefined {
    return this.#extraCa;
  }

  /** Told after the trust changed (the delivery engine rebuilds its TLS context). */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Reads the stored trust again; a failed read (database away) keeps what was known. */
  async refresh(): Promise<void> {
    let stored: StoredTrust;
    try {
      stored = await readStoredTrust(this.#db);
    } catch (error) {
      this.#logger.debug({ err: error }, 'webhook trust: could not read the stored setting; keeping the last one');
      return;
    }
    if (JSON.stringify(stored) === JSON.stringify(this.#stored)) return;
    let allow: AllowList;
    try {
      allow = parseAllowCidrs([this.#envCidrs, ...stored.allowCidrs].join(','));
    } catch (error) {
      this.#logger.warn({ err: error }, 'webhook trust: the stored CIDRs do not parse; ignoring them (npm run admin -- webhook-trust clear)');
      allow = parseAllowCidrs(this.#envCidrs);
    }
    const pems = [this.#envCa, ...stored.caCertificates].filter((p): p is string => p !== undefined);
    this.#stored = stored;
    this.#allow = allow;
    this.#extraCa = pems.length === 0 ? undefined : pems.join('\n');
    this.#logger.info({ allowCidrs: allow.entries.map((e) => e.cidr), caCertificates: pems.length }, 'webhook trust applied');
    for (const listener of this.#listeners) listener();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#unsubscribe();
  }
}
