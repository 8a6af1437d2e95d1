import type { Executor } from '../db/executor.ts';
import { writeDeploymentSetting } from '../platform/deployment-settings.ts';

/** The deployment switch dispatch reads on every call. Off until an operator turns it on. */
export const COMMAND_WEBHOOKS = 'command_webhooks_enabled';

export async function readCommandWebhooksEnabled(db: Executor): Promise<boolean> {
  const row = await db.selectFrom('deployment_settings').select('value').where('key', '=', COMMAND_WEBHOOKS).executeTakeFirst();
  return row?.value === true;
}

export async function writeCommandWebhooksEnabled(db: Executor, enabled: boolean, at: Date): Promise<void> {
  await writeDeploymentSetting(db, COMMAND_WEBHOOKS, JSON.stringify(enabled), at);
}
