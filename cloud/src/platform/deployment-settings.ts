import type { Executor } from '../db/executor.ts';

/**
 * The deployment's settings (`deployment_settings`, one JSON value per key), written here only: the
 * command-webhooks switch (commands/settings.ts) and the webhook trust (webhook-trust.ts) name their keys.
 */
export async function writeDeploymentSetting(db: Executor, key: string, value: string, at: Date): Promise<void> {
  await db
    .insertInto('deployment_settings')
    .values({ key, value, updated_at: at })
    .onConflict((oc) => oc.column('key').doUpdateSet({ value, updated_at: at }))
    .execute();
}
