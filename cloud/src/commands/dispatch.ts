import type { DispatchRequest, DispatchResponse } from '@sortie/contracts';
import { isArmed, readArming } from '../arming/arming.ts';
import type { AppContext } from '../platform/context.ts';
import { conflict, notFound } from '../http/api-error.ts';
import { sql } from 'kysely';
import type { OutboxJob } from '../platform/outbox.ts';
import { COMMAND_WEBHOOKS, readCommandWebhooksEnabled } from './settings.ts';
import { listEnabledEndpoints } from '../webhooks/endpoints.ts';

interface DispatchOutcome {
  response: DispatchResponse;
  /** Outbox rows written in the dispatch transaction, to publish after commit. */
  jobs: OutboxJob[];
}

/**
 * Dispatch: check the spec's four preconditions in its order, then in one transaction move the command
 * `logged → queued` by compare-and-set, set its deadline and write one delivery job per enabled
 * endpoint (the outbox); once that committed, hand the jobs to the outbox port (ctx.outbox), which
 * publishes them to the delivery queue. Returns without waiting for the queue or any receiver.
 */
export async function dispatchCommand(ctx: AppContext, organizationId: string, body: DispatchRequest): Promise<DispatchResponse> {
  const outcome = (await dispatchInOneStatement(ctx, organizationId, body)) ?? (await dispatchExplained(ctx, organizationId, body));
  ctx.outbox.committed(outcome.jobs);
  return outcome.response;
}

/**
 * The common case in one round trip: the compare-and-set carries every precondition in its WHERE, so the
 * move, the deadline and the outbox rows happen together or not at all. Undefined when the command did
 * not move; then dispatchExplained checks again, in the spec's order, to say which precondition failed.
 */
async function dispatchInOneStatement(ctx: AppContext, organizationId: string, body: DispatchRequest): Promise<DispatchOutcome | undefined> {
  const now = ctx.clock.now();
  const deadline = new Date(now.getTime() + body.ackTimeoutSeconds * 1000);
  const { rows } = await sql<{ job_id: string; endpoint_id: string; url: string }>`
    with moved as (
      update commands set status = 'queued', queued_at = ${now}, ack_deadline_at = ${deadline}
      where id = ${body.commandId} and organization_id = ${organizationId}
        and status = 'logged' and retracted_at is null
        and exists (select 1 from deployment_settings where key = ${COMMAND_WEBHOOKS} and value = 'true'::jsonb)
        and exists (select 1 from armings a where a.dataset_id = commands.dataset_id and a.disarmed_at is null and a.expires_at > ${now})
        and exists (select 1 from webhook_endpoints e where e.organization_id = ${organizationId} and e.deleted_at is null and e.disabled_at is null)
      returning id
    ),
    endpoints as (
      select id, url, created_at from webhook_endpoints
      where organization_id = ${organizationId} and deleted_at is null and disabled_at is null
    ),
    jobs as (
      insert into delivery_jobs (id, organization_id, command_id, endpoint_id)
      select gen_random_uuid(), ${organizationId}, m.id, e.id from moved m cross join endpoints e
      returning id, endpoint_id
    )
    select j.id as job_id, e.id as endpoint_id, e.url from jobs j join endpoints e on e.id = j.endpoint_id
    order by e.created_at, e.id
  `.execute(ctx.db);
  if (rows.length === 0) return undefined;
  return {
    response: {
      commandId: body.commandId,
      status: 'queued',
      ackDeadline: deadline.toISOString(),
      endpoints: rows.map((r) => ({ id: r.endpoint_id, url: r.url })),
    },
    jobs: rows.map((r) => ({ jobId: r.job_id, organizationId })),
  };
}

/** The same dispatch step by step in one transaction, answering with the first precondition that fails. */
async function dispatchExplained(ctx: AppContext, organizationId: string, body: DispatchRequest): Promise<DispatchOutcome> {
  return ctx.db.transaction().execute(async (tx) => {
    const command = await tx
      .selectFrom('commands')
      .select(['id', 'dataset_id', 'status', 'retracted_at'])
      .where('id', '=', body.commandId)
      .where('organization_id', '=', organizationId)
      .executeTakeFirst();
    if (!command) throw notFound(`no command ${body.commandId}`);
    const now = ctx.clock.now();

    // (1) The deployment switch, read on every dispatch.
    if (!(await readCommandWebhooksEnabled(tx))) {
      throw conflict('command webhooks are disabled on this deployment (an operator turns them on with `admin command-webhooks on`)');
    }
    // (2) An unexpired arming of the command's dataset.
    const arming = await readArming(tx, command.dataset_id);
    if (!isArmed(arming, now)) {
      const why = !arming || arming.disarmed_at ? 'is not armed' : `arming expired at ${arming.expires_at.toISOString()}`;
      throw conflict(`dataset ${command.dataset_id} ${why}; arm it before dispatching`);
    }
    // (3) Somewhere to send it.
    const endpoints = (await listEnabledEndpoints(tx, organizationId)).map(({ id, url }) => ({ id, url }));
    if (endpoints.length === 0) throw conflict('no enabled webhook endpoint in this organization; register one with /api/webhooks/create');

    // (4) Still logged: an atomic compare-and-set, so of racing dispatches exactly one wins.
    const deadline = new Date(now.getTime() + body.ackTimeoutSeconds * 1000);
    const moved = await tx
      .updateTable('commands')
      .set({ status: 'queued', queued_at: now, ack_deadline_at: deadline })
      .where('id', '=', command.id)
      .where('status', '=', 'logged')
      .where('retracted_at', 'is', null)
      .returning('id')
      .executeTakeFirst();
    if (!moved) {
      const current = await tx.selectFrom('commands').select(['status', 'retracted_at']).where('id', '=', command.id).executeTakeFirstOrThrow();
      throw conflict(
        current.retracted_at ? 'command has been retracted and cannot be dispatched' : `command is already ${current.status}, not logged`,
      );
    }

    const jobs = endpoints.map((endpoint) => ({ id: crypto.randomUUID(), organization_id: organizationId, command_id: command.id, endpoint_id: endpoint.id }));
    await tx.insertInto('delivery_jobs').values(jobs).execute();
    return {
      response: { commandId: command.id, status: 'queued', ackDeadline: deadline.toISOString(), endpoints },
      jobs: jobs.map((j) => ({ jobId: j.id, organizationId })),
    };
  });
}
