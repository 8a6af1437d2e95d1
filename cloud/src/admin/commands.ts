import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { isUuid } from '@sortie/contracts';
import { apiKeyExists, issueApiKey, KeyIssueError, revokeApiKey } from '../auth/api-keys.ts';
import { createOrganization, createUser, organizationExists } from '../auth/organizations.ts';
import type { Db } from '../db/connect.ts';
import { readCommandWebhooksEnabled, writeCommandWebhooksEnabled } from '../commands/settings.ts';
import { describeCertificate, normaliseCidrs, pemCertificates, readStoredTrust, writeStoredTrust, type StoredTrust } from '../platform/webhook-trust.ts';
import { listKeys, listOrganizations, listUsers } from './listings.ts';
import { parseDuration } from './parse-duration.ts';

/** A failure the CLI reports as JSON on stderr with a non-zero exit. */
export class AdminError extends Error {
  override name = 'AdminError';
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

export const USAGE = `usage: npm run admin -- <command> [options]

  create-org --name NAME                                   → {"organizationId","ownerUserId"}
  create-user --org ID --role owner|member [--name N] [--email E] → {"userId"}
  create-key --org ID --scopes a,b [--user ID] [--expires-in 30d]  → {"apiKey","keyId","scopes","expiresAt"}
  revoke-key --id KEY_ID                                   → {"keyId","revoked"}
  command-webhooks on|off|status                           → {"commandWebhooks"}
  webhook-trust add [--allow-cidrs LIST] [--ca-file PEM] | clear | status
                                                           → {"allowCidrs","caCertificates"} private ranges and CAs
                                                             webhooks may use, besides the environment's; applied
                                                             by a running server without a restart
  list-orgs                                                → [{"organizationId","name","createdAt","users","activeKeys"}]
  list-users [--org ID]                                    → [{"userId","organizationId","role","name","email","createdAt"}]
  list-keys [--org ID]                                     → [{"keyId","organizationId","userId","prefix","scopes","createdAt","expiresAt","revokedAt","state"}]

Scopes: commands:read commands:write datasets:read datasets:write telemetry:read telemetry:write
        webhooks:read webhooks:write (webhook scopes only for an owner: pass --user OWNER_ID)`;

function required(values: Record<string, string | undefined>, name: string): string {
  const value = values[name];
  if (!value) throw new AdminError('invalid_request', `--${name} is required`);
  return value;
}

function uuid(value: string, name: string): string {
  if (!isUuid(value)) throw new AdminError('invalid_request', `--${name} must be a UUID`);
  return value;
}

/** Options that name a file: the CLI makes them absolute before a running server reads them. */
export const PATH_OPTIONS: readonly string[] = ['--ca-file'];

/** The stored webhook trust as the CLI prints it: certificates by subject and fingerprint, never whole. */
function showTrust(trust: StoredTrust) {
  return { allowCidrs: trust.allowCidrs, caCertificates: trust.caCertificates.map(describeCertificate) };
}

/** Run one admin command; returns what is printed as JSON. */
export async function runAdminCommand(db: Db, argv: string[], now: () => Date = () => new Date()): Promise<unknown> {
  const [command, ...rest] = argv;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      org: { type: 'string' },
      role: { type: 'string' },
      email: { type: 'string' },
      scopes: { type: 'string' },
      user: { type: 'string' },
      'expires-in': { type: 'string' },
      id: { type: 'string' },
      'allow-cidrs': { type: 'string' },
      'ca-file': { type: 'string' },
    },
  });
  switch (command) {
    case 'create-org':
      return createOrganization(db, required(values, 'name'));
    case 'create-user': {
      const org = uuid(required(values, 'org'), 'org');
      const role = required(values, 'role');
      if (role !== 'owner' && role !== 'member') throw new AdminError('invalid_request', '--role must be owner or member');
      if (!(await organizationExists(db, org))) throw new AdminError('not_found', `no organization ${org}`);
      return createUser(db, { organizationId: org, role, name: values.name, email: values.email });
    }
    case 'create-key': {
      const org = uuid(required(values, 'org'), 'org');
      const scopes = required(values, 'scopes').split(',').map((s) => s.trim()).filter(Boolean);
      let expiresAt: Date | undefined;
      if (values['expires-in']) {
        try {
          expiresAt = new Date(now().getTime() + parseDuration(values['expires-in']) * 1000);
        } catch (error) {
          throw new AdminError('invalid_request', (error as Error).message);
        }
      }
      try {
        return await issueApiKey(db, {
          organizationId: org,
          scopes,
          userId: values.user ? uuid(values.user, 'user') : undefined,
          expiresAt,
        });
      } catch (error) {
        if (error instanceof KeyIssueError) throw new AdminError(error.code, error.message);
        throw error;
      }
    }
    case 'revoke-key': {
      const id = uuid(required(values, 'id'), 'id');
      const revoked = await revokeApiKey(db, id, now());
      if (!revoked) {
        if (!(await apiKeyExists(db, id))) throw new AdminError('not_found', `no key ${id}`);
      }
      return { keyId: id, revoked: true };
    }
    case 'command-webhooks': {
      const mode = positionals[0];
      if (mode === 'on' || mode === 'off') await writeCommandWebhooksEnabled(db, mode === 'on', now());
      else if (mode !== 'status') throw new AdminError('invalid_request', 'command-webhooks takes on, off or status');
      return { commandWebhooks: (await readCommandWebhooksEnabled(db)) ? 'on' : 'off' };
    }
    case 'webhook-trust': {
      const mode = positionals[0];
      if (mode === 'status') return showTrust(await readStoredTrust(db));
      if (mode === 'clear') {
        await writeStoredTrust(db, { allowCidrs: [], caCertificates: [] }, now());
        return showTrust(await readStoredTrust(db));
      }
      if (mode !== 'add') throw new AdminError('invalid_request', 'webhook-trust takes add, clear or status');
      const cidrs = values['allow-cidrs'];
      const caFile = values['ca-file'];
      if (cidrs === undefined && caFile === undefined) throw new AdminError('invalid_request', 'webhook-trust add needs --allow-cidrs LIST, --ca-file PEM, or both');
      let added: string[] = [];
      let certificates: string[] = [];
      try {
        if (cidrs !== undefined) added = normaliseCidrs(cidrs);
      } catch (error) {
        throw new AdminError('invalid_request', `--allow-cidrs: ${(error as Error).message.replace(/^SORTIE_WEBHOOK_ALLOW_CIDRS: /, '')}`);
      }
      try {
        if (caFile !== undefined) certificates = pemCertificates(await readFile(caFile, 'utf8'));
      } catch (error) {
        throw new AdminError('invalid_request', `--ca-file ${caFile}: ${(error as Error).message}`);
      }
      // Adding what is already there changes nothing, so the receiver's setup may be run again.
      const stored = await readStoredTrust(db);
      const fingerprints = new Set(stored.caCertificates.map((pem) => describeCertificate(pem).fingerprint256));
      const next: StoredTrust = {
        allowCidrs: [...new Set([...stored.allowCidrs, ...added])],
        caCertificates: [...stored.caCertificates, ...certificates.filter((pem) => !fingerprints.has(describeCertificate(pem).fingerprint256))],
      };
      await writeStoredTrust(db, next, now());
      return showTrust(next);
    }
    case 'list-orgs':
      return listOrganizations(db, now());
    case 'list-users':
    case 'list-keys': {
      const org = values.org === undefined ? undefined : uuid(values.org, 'org');
      if (org !== undefined && !(await organizationExists(db, org))) throw new AdminError('not_found', `no organization ${org}`);
      return command === 'list-users' ? listUsers(db, org) : listKeys(db, now(), org);
    }
    default:
      throw new AdminError('invalid_request', command ? `unknown command "${command}"\n${USAGE}` : USAGE);
  }
}
