import type { DispatchRequest, DispatchResponse } from '@sortie/contracts';
import { isArmed, readArming } from '../arming/arming.ts';
import type { AppContext } from '../platform/context.ts';
import { conflict, notFound } from '../platform/errors.ts';
import { sql } from 'kysely';
import type { InlineJob, OutboxJob } from '../platform/outbox.ts';
import { runHot } from '../db/prepared.ts';
import { mintAckToken } from './ack-tokens.ts';
import { noteDeadline } from './sweeper.ts';
import { COMMAND_WEBHOOKS, readCommandWebhooksEnabled } from './settings.ts';
import { listEnabledEndpoints } from '../webhooks/endpoints.ts';

interface DispatchOutcome {
  response: DispatchResponse;
  /** Outbox rows written in the dispatch transaction, to publish after commit. */
  jobs: OutboxJob[];
  /** Outbox rows leased in the dispatch statement, for this process to attempt at once. */
  inline: InlineJob[];
  /** The command's dataset, whose live followers see it queued. */
  datasetId: string;
}

/**
 * Each organization's number of enabled endpoints at its last dispatch: how many inline slots a dispatch
 * reserves (before its statement says how many jobs it writes). A guess too low leaves the other jobs to
 * the queue; too high, the extra slots are released after the statement.
 */
const lastFanOut = new Map<string, number>();
const MAX_REMEMBERED = 10_000;

function rememberFanOut(organizationId: string, endpoints: number): void {
  lastFanOut.delete(organizationId);
  lastFanOut.set(organizationId, endpoints);
  if (lastFanOut.size > MAX_REMEMBERED) lastFanOut.delete(lastFanOut.keys().next().value!);
}

/**
 * Dispatch: check the spec's four preconditions in its order, then in one transaction move the command
 * `logged → queued` by compare-and-set, set its deadline and write one delivery job per enabled
 * endpoint (the outbox); once that committed, hand the jobs to the outbox port (ctx.outbox), which
 * publishes them to the delivery queue. Returns without waiting for the queue or any receiver.
 */
export async function dispatchCommand(ctx: AppContext, organizationId: string, body: DispatchRequest): Promise<DispatchResponse> {
  const outcome = (await dispatchInOneStatement(ctx, organizationId, body)) ?? (await dispatchExplained(ctx, organizationId, body));
  ctx.outbox.committed(outcome.jobs, outcome.inline);
  ctx.live.committed(outcome.datasetId, 'commands');
  noteDeadline(ctx, new Date(outcome.response.ackDeadline));
  return outcome.response;
}

/**
 * The common case in one round trip: the compare-and-set carries every precondition in its WHERE, so the
 * move, the deadline and the outbox rows happen together or not at all. Undefined when the command did
 * not move; then dispatchExplained checks again, in the spec's order, to say which precondition failed.
 *
 * The same statement prepares the first attempt of as many jobs as this process has inline slots for
 * (ctx.outbox.reserveInline): it leases them and returns the command, the endpoints and the arming
 * expiry, which is all the attempt reads (its ack token needs no row). Every check the delivery worker
 * makes before an attempt holds here by the WHERE (queued, before the deadline, endpoint enabled,
 * armed), at this statement's instant. So a dispatch and its delivery cost two
 * statements: this one and the attempt's record, with no queue message in between.
 */
async function dispatchInOneStatement(ctx: AppContext, organizationId: string, body: DispatchRequest): Promise<DispatchOutcome | undefined> {
  const now = ctx.clock.now();
  const deadline = new Date(now.getTime() + body.ackTimeoutSeconds * 1000);
  const reserved = ctx.outbox.reserveInline(lastFanOut.get(organizationId) ?? 1);
  // Ack tokens prove themselves (ack-tokens.ts): minted here, stored nowhere.
  const tokens = Array.from({ length: reserved }, () => mintAckToken(ctx.secretKey, body.commandId, deadline));
  // Delivery's part: its jobs, their first lease and what the first attempts read (delivery/outbox-port.ts).
  const delivery = ctx.outbox.dispatchPart({ organizationId, now, inline: reserved });
  let rows: object[];
  try {
    rows = await runHot({ db: ctx.db, pool: ctx.database.pool }, 'sortie_dispatch', sql<object>`
      with moved as (
        update commands set status = 'queued', queued_at = ${now}, ack_deadline_at = ${deadline}
        where id = ${body.commandId} and organization_id = ${organizationId}
          and status = 'logged' and retracted_at is null
          and exists (select 1 from deployment_settings where key = ${COMMAND_WEBHOOKS} and value = 'true'::jsonb)
          and exists (select 1 from armings a where a.dataset_id = commands.dataset_id and a.disarmed_at is null and a.expires_at > ${now})
          and exists (select 1 from webhook_endpoints e where e.organization_id = ${organizationId} and e.deleted_at is null and e.disabled_at is null)
        returning *
      ),
      endpoints as (
        select *, row_number() over (order by created_at, id)::int as n from webhook_endpoints
        where organization_id = ${organizationId} and deleted_at is null and disabled_at is null
      ),
      jobs as (${delivery.insertJobs}
      )
      select ${delivery.attemptColumns}
      from jobs j join endpoints e on e.id = j.endpoint_id
      left join moved c on e.n = 1
      left join armings a on a.dataset_id = c.dataset_id
      order by e.n
    `);
  } catch (error) {
    ctx.outbox.releaseInline(reserved);
    throw error;
  }
  if (rows.length === 0) {
    ctx.outbox.releaseInline(reserved);
    return undefined;
  }
  rememberFanOut(organizationId, rows.length);
  const { jobs, inline, endpoints, datasetId } = delivery.read(rows, tokens);
  ctx.outbox.releaseInline(reserved - inline.length);
  return {
    response: { commandId: body.commandId, status: 'queued', ackDeadline: deadline.toISOString(), endpoints },
    jobs,
    inline,
    datasetId,
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

    const jobs = await ctx.outbox.enqueueCommand(tx, { organizationId, commandId: command.id, endpointIds: endpoints.map((e) => e.id) });
    return {
      response: { commandId: command.id, status: 'queued', ackDeadline: deadline.toISOString(), endpoints },
      jobs,
      inline: [],
      datasetId: command.dataset_id,
    };
  });
}
