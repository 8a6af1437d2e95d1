import type { KyselyPlugin } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedQueuedCommand } from '../testing/delivery-rows.ts';
import { migratedTestDatabase, type MigratedTestDatabase } from '../testing/test-database.ts';
import { listEndpointViews } from './endpoints.ts';

let database: MigratedTestDatabase;

beforeAll(async () => {
  database = await migratedTestDatabase();
});
afterAll(() => database?.drop());

describe('listEndpointViews', () => {
  it('shows a failure streak and the latest attempt from one snapshot, even when a delivery is recorded mid-read', async () => {
    const db = database.db;
    const { org, cmd, endpoints, jobs } = await seedQueuedCommand(db, 1);
    const [endpoint, job] = [endpoints[0]!, jobs[0]!];
    const attempt = (statusCode: number, at: Date) =>
      db
        .insertInto('delivery_attempts')
        .values({ id: crypto.randomUUID(), organization_id: org, job_id: job, command_id: cmd, endpoint_id: endpoint, endpoint_url: 'https://x.invalid/', event_type: 'command.dispatched', attempt: 1, status_code: statusCode, response: '', error: null, duration_ms: 1, attempted_at: at })
        .execute();
    // Three failures so far.
    await attempt(503, new Date(Date.now() - 2000));
    await db.updateTable('webhook_endpoints').set({ consecutive_failures: 3 }).where('id', '=', endpoint).execute();

    // The delivery succeeds while the list is being read: its attempt and the streak's reset commit
    // together (as the record statement does), right after the read's first statement has run.
    let recorded = false;
    const recordAfterFirstStatement: KyselyPlugin = {
      transformQuery: (args) => args.node,
      transformResult: async (args) => {
        if (!recorded) {
          recorded = true;
          await db.transaction().execute(async (tx) => {
            await tx.updateTable('webhook_endpoints').set({ consecutive_failures: 0 }).where('id', '=', endpoint).execute();
            await tx.insertInto('delivery_attempts').values({ id: crypto.randomUUID(), organization_id: org, job_id: job, command_id: cmd, endpoint_id: endpoint, endpoint_url: 'https://x.invalid/', event_type: 'command.dispatched', attempt: 2, status_code: 202, response: '', error: null, duration_ms: 1, attempted_at: new Date() }).execute();
          });
        }
        return args.result;
      },
    };
    const [during] = await listEndpointViews(db.withPlugin(recordAfterFirstStatement), org);
    expect(recorded).toBe(true);
    expect([during!.row.consecutive_failures, during!.last?.statusCode]).toEqual([3, 503]);
    const [after] = await listEndpointViews(db, org);
    expect([after!.row.consecutive_failures, after!.last?.statusCode]).toEqual([0, 202]);
  });

  it('an endpoint never attempted has no latest attempt', async () => {
    const { org } = await seedQueuedCommand(database.db, 2);
    const views = await listEndpointViews(database.db, org);
    expect(views).toHaveLength(2);
    expect(views.map((v) => v.last)).toEqual([undefined, undefined]);
  });
});
