/**
 * The eight API key scopes of the spec. Additions take the scope of what they act on rather than a new
 * one: limit rules (/api/limits/*) are a dataset's configuration like its channels, so datasets:read
 * reads them and datasets:write changes them (decision 0011).
 */
export const SCOPES = [
  'commands:read',
  'commands:write',
  'datasets:read',
  'datasets:write',
  'telemetry:read',
  'telemetry:write',
  'webhooks:read',
  'webhooks:write',
] as const;
export type Scope = (typeof SCOPES)[number];

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

/** Keys carrying these can be created only for a workspace owner. */
export const OWNER_ONLY_SCOPES: readonly Scope[] = ['webhooks:read', 'webhooks:write'];
