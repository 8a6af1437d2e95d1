import { sql } from 'kysely';
import type { Executor } from '../db/executor.ts';

/** What seedQueuedCommand wrote: the ids of each row. */
export interface SeededCommand {
  org: string;
  ds: string;
  cmd: string;
  endpoints: string[];
  /** One delivery job per endpoint, in the same order. */
  jobs: string[];
}

/**
 * An organization with a queued command (its ack deadline an hour away), `endpointCount` webhook
 * endpoints and one delivery job of the command per endpoint, written straight to the tables: for
 * tests of the delivery statements and rows that need no service around them.
 */
export async function seedQueuedCommand(db: Executor, endpointCount: number): Promise<SeededCommand> {
  const [org, exp, ds, cmd] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
  await db.insertInto('organizations').values({ id: org, name: 'o' }).execute();
  await db.insertInto('experiments').values({ id: exp, organization_id: org, name: 'e', description: '' }).execute();
  await db.insertInto('datasets').values({ id: ds, organization_id: org, experiment_id: exp, name: 'd', storage_shape: 'wide' }).execute();
  await sql`insert into commands (id, organization_id, experiment_id, dataset_id, command_text, rel_time, issued_at, status, ack_deadline_at)
            values (${cmd}, ${org}, ${exp}, ${ds}, 'X', 0, now(), 'queued', now() + interval '1 hour')`.execute(db);
  const endpoints: string[] = [];
  const jobs: string[] = [];
  for (let i = 0; i < endpointCount; i++) {
    const endpoint = crypto.randomUUID();
    await db.insertInto('webhook_endpoints').values({ id: endpoint, organization_id: org, label: '', url: 'https://x.invalid/', secret_ciphertext: 'x', updated_at: new Date() }).execute();
    endpoints.push(endpoint);
    const job = crypto.randomUUID();
    await db.insertInto('delivery_jobs').values({ id: job, organization_id: org, command_id: cmd, endpoint_id: endpoint }).execute();
    jobs.push(job);
  }
  return { org, ds, cmd, endpoints, jobs };
}
