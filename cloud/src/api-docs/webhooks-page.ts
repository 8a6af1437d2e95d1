import {
  API_KEY_HEADER,
  PING_COMMAND_ID,
  SIGNATURE_TOLERANCE_SECONDS,
  SIGNATURE_VERSION,
  WEBHOOK_HEADERS,
  WEBHOOK_USER_AGENT,
  type CommandDispatchedBody,
  type LimitCrossingBody,
  type PingBody,
} from '@sortie/contracts';
import { JITTER, MAX_RETRY_AFTER_MS } from '../delivery/backoff.ts';
import { RESPONSE_KEEP_BYTES } from '../delivery/send.ts';
import { AUTO_DISABLE_AFTER_FAILURES } from '../delivery/endpoint-health.ts';
import { LIMIT_NOTIFICATION_WINDOW_MS } from '../delivery/deliver.ts';
import { esc, guidePage } from './html.ts';

/** A `command.dispatched` body as the service sends it (the docs test parses it with the contracts' schema). */
export const EXAMPLE_DISPATCHED: CommandDispatchedBody = {
  eventType: 'command.dispatched',
  sentAt: '2026-04-01T12:00:03.120Z',
  command: {
    id: '5b1f0c2e-8d7a-4f7e-9a51-2c3d4e5f6a7b',
    datasetId: '0f0e0d0c-0b0a-4909-8807-060504030201',
    experimentId: '11111111-2222-4333-8444-555555555555',
    organizationId: '99999999-8888-4777-8666-555555555555',
    commandText: 'RTL',
    description: 'return to launch',
    templateKey: 'rtl',
    category: 'navigation',
    args: { altitude: 30 },
    destructive: false,
    relTime: 12.5,
    issuedAt: '2026-04-01T12:00:02.900Z',
    issuedBy: { name: '', email: '', apiKeyId: '7c9e6679-7425-40de-944b-e07fc1f90ae7' },
    clientToken: 'op-42',
  },
  ack: { url: 'https://sortie.example/api/commands/ack', token: 'cak_…', deadline: '2026-04-01T12:10:03.000Z' },
  arming: { expiresAt: '2026-04-01T13:00:00.000Z' },
};

/** A `ping` body (POST /api/webhooks/test). */
export const EXAMPLE_PING: PingBody = {
  eventType: 'ping',
  sentAt: '2026-04-01T12:00:00.000Z',
  endpoint: { id: '3fa85f64-5717-4562-b3fc-2c963f66afa6', organizationId: '99999999-8888-4777-8666-555555555555' },
};

/** A `limit.crossing` body at the crossing's end (endpoints that opted in; the docs test parses it with the contracts' schema). */
export const EXAMPLE_LIMIT: LimitCrossingBody = {
  eventType: 'limit.crossing',
  sentAt: '2026-04-01T12:04:10.230Z',
  event: {
    id: '6b1e2f3a-4c5d-4e6f-8a7b-9c0d1e2f3a4b',
    datasetId: '0f0e0d0c-0b0a-4909-8807-060504030201',
    experimentId: '11111111-2222-4333-8444-555555555555',
    organizationId: '99999999-8888-4777-8666-555555555555',
    timestamp: '2026-04-01T12:04:07.480Z',
    kind: 'LIMIT',
    message: 'ATTITUDE.roll above 0.5 (critical)',
    data: {
      ruleId: '2c9d7e61-5f4a-4b3c-9d8e-7f6a5b4c3d2e',
      ruleName: 'roll limit',
      signal: 'mavlink.ATTITUDE.roll',
      severity: 'critical',
      condition: 'above',
      low: null,
      high: 0.5,
      holdMs: 200,
      start: '2026-04-01T12:04:07.480Z',
      end: '2026-04-01T12:04:09.960Z',
      worstValue: 0.71,
      worstTime: '2026-04-01T12:04:08.620Z',
      active: false,
    },
    createdAt: '2026-04-01T12:04:07.760Z',
  },
};

/** Verification in TypeScript with the contracts (Node, Deno, browsers, edge workers: Web Crypto only). */
export const TYPESCRIPT_VERIFY = `import { verifyWebhook, WebhookVerificationError } from '@sortie/contracts';

// rawBody: the request's bytes exactly as received (verify before parsing).
// secrets: the endpoint's whsec_ secret, or both during a rotation overlap.
try {
  const { body } = await verifyWebhook(rawBody, request.headers, secrets);
  if (body.eventType === 'ping') return new Response('pong');          // a test event: act on nothing
  if (body.eventType === 'command.dispatched') await persist(body);     // then answer 2xx, then act once per command.id
  if (body.eventType === 'limit.crossing') await alert(body);           // opted-in endpoints only; once per (event.id, event.data.active)
} catch (error) {
  if (error instanceof WebhookVerificationError) return new Response(error.code, { status: 401 });
  throw error;
}`;

/** The same check in Python 3, standard library only (the docs test runs it against a signed delivery). */
export const PYTHON_VERIFY = `import hashlib, hmac, json, time

def verify(raw_body: bytes, headers: dict, secrets: list, tolerance: int = ${SIGNATURE_TOLERANCE_SECONDS}) -> dict:
    """headers: lowercase names. Raises ValueError unless a live secret signed raw_body."""
    ts = headers["${WEBHOOK_HEADERS.timestamp}"]
    if not ts.isdigit() or abs(time.time() - int(ts)) > tolerance:
        raise ValueError("timestamp missing or outside the tolerance")
    signed = b"${SIGNATURE_VERSION}:" + ts.encode() + b":" + raw_body
    presented = [v.strip()[3:] for v in headers["${WEBHOOK_HEADERS.signature}"].split(",") if v.strip().startswith("${SIGNATURE_VERSION}=")]
    for secret in secrets:
        expected = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
        if any(hmac.compare_digest(expected, p) for p in presented):
            return json.loads(raw_body)
    raise ValueError("no signature matches a live secret")`;

/** /docs/webhooks: what a receiver gets, how to verify it, and what its answers mean. */
export function renderWebhooksPage(settings: { retryScheduleMs: readonly number[]; timeoutMs: number; publicUrl: string }): string {
  const schedule = settings.retryScheduleMs.map((ms) => (ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`)).join(', ');
  const body = `
<p>After <code>POST /api/commands/dispatch</code>, each enabled endpoint of the organization receives the command as an HTTPS POST
(<code>command.dispatched</code>); endpoints that opted in also receive limit crossings (<code>limit.crossing</code>);
<code>POST /api/webhooks/test</code> sends a <code>ping</code> the same way. Deliveries are at least once:
deduplicate on <code>command.id</code>. Acknowledge by POSTing to <code>ack.url</code> with <code>Authorization: Bearer &lt;ack.token&gt;</code>
(no API key) before <code>ack.deadline</code>.</p>

<h2>The request</h2>
<table><thead><tr><th>header</th><th>value</th></tr></thead><tbody>
<tr><td><code>content-type</code></td><td><code>application/json</code></td></tr>
<tr><td><code>user-agent</code></td><td><code>${esc(WEBHOOK_USER_AGENT)}</code></td></tr>
<tr><td><code>${WEBHOOK_HEADERS.event}</code></td><td><code>command.dispatched</code>, <code>limit.crossing</code> or <code>ping</code> (not signed: act on the body's <code>eventType</code>)</td></tr>
<tr><td><code>${WEBHOOK_HEADERS.delivery}</code></td><td>this attempt: <code>&lt;job id&gt;.&lt;attempt&gt;</code>, also the attempt's <code>deliveryId</code> in <code>GET /api/webhooks/deliveries</code> (not signed)</td></tr>
<tr><td><code>${WEBHOOK_HEADERS.timestamp}</code></td><td>Unix seconds when the attempt was signed (signed)</td></tr>
<tr><td><code>${WEBHOOK_HEADERS.signature}</code></td><td><code>${SIGNATURE_VERSION}=&lt;hex&gt;</code>, or two values joined by <code>,</code> while a rotation overlap keeps the previous secret valid</td></tr>
</tbody></table>

<h3><code>command.dispatched</code></h3>
<pre>${esc(JSON.stringify(EXAMPLE_DISPATCHED, null, 2))}</pre>
<p class="note">A fresh <code>ack.token</code> is minted for every attempt; <code>issuedBy</code> has an empty name and email for a command logged
with an API key; <code>clientToken</code> is empty when the create request had none.</p>
<h3><code>limit.crossing</code></h3>
<p>Only to endpoints that opted in (<code>limitEvents: true</code> on <code>POST /api/webhooks/create</code> or <code>/api/webhooks/update</code>):
one delivery when a limit rule's crossing has held for its hold time and its LIMIT event is stored (<code>data.active</code> true,
<code>data.end</code> null), and one when it ends (<code>data.active</code> false, the end and the worst value over the whole crossing).
<code>event</code> is the event as <code>GET /api/datasets/events</code> lists it at that moment (a MAVLink dataset's on the charts'
aligned axis). An endpoint that has not opted in never receives one, so a receiver written for commands keeps working.</p>
<pre>${esc(JSON.stringify(EXAMPLE_LIMIT, null, 2))}</pre>
<p class="note">Signed, timed out, retried and counted toward auto-disable exactly like a command's delivery; retried for up to
${LIMIT_NOTIFICATION_WINDOW_MS / 3_600_000} h after the crossing started or ended (a command's retries stop at its ack deadline).
At least once: deduplicate on <code>event.id</code> with <code>event.data.active</code>. Nothing to acknowledge.</p>
<h3><code>ping</code></h3>
<pre>${esc(JSON.stringify(EXAMPLE_PING, null, 2))}</pre>
<p class="note">No command and no ack token: verify it like any delivery, answer 2xx, act on nothing. Its attempt is answered by
<code>POST /api/webhooks/test</code> (with <code>commandId</code> <code>${PING_COMMAND_ID}</code>) and is not stored.</p>

<h2>The signature</h2>
<p><code>${SIGNATURE_VERSION}=</code> lowercase hex of HMAC-SHA256, keyed with the UTF-8 bytes of the whole secret (<code>whsec_…</code>
included), over <code>${SIGNATURE_VERSION}:&lt;${WEBHOOK_HEADERS.timestamp}&gt;:&lt;raw body bytes&gt;</code>. Verify over the bytes as
received, before parsing; refuse a timestamp more than ${SIGNATURE_TOLERANCE_SECONDS} s from your clock; accept when any presented
<code>${SIGNATURE_VERSION}</code> value matches any of your live secrets (two during a rotation); compare in constant time.</p>
<h3>TypeScript</h3>
<pre>${esc(TYPESCRIPT_VERIFY)}</pre>
<p class="note"><code>contracts/examples/webhook-receiver.ts</code> is a whole receiver on it: journal fsynced before the 2xx, at most once
per command, then the ack.</p>
<h3>Python</h3>
<pre>${esc(PYTHON_VERIFY)}</pre>

<h2>Answers, retries and auto-disable</h2>
<table><thead><tr><th>receiver answers</th><th>the service</th></tr></thead><tbody>
<tr><td>2xx within ${settings.timeoutMs / 1000} s</td><td>delivered; the command waits for its ack</td></tr>
<tr><td>408, 429, 5xx, no answer, time-out, TLS or connection failure</td><td>retried after ${esc(schedule)} (the last wait repeats, ±${JITTER * 100} % jitter) until <code>ack.deadline</code>; <code>Retry-After</code> is honoured on 429 and 503 (up to ${MAX_RETRY_AFTER_MS / 60_000} min)</td></tr>
<tr><td>any other 3xx or 4xx</td><td>final: not retried (redirects are never followed)</td></tr>
</tbody></table>
<p>Each attempt is listed by <code>GET /api/webhooks/deliveries?commandId=</code> with its status, duration, error and the first
${RESPONSE_KEEP_BYTES} bytes of your answer, and <code>GET /api/webhooks/list</code> shows each endpoint's failure streak and latest attempt.
After ${AUTO_DISABLE_AFTER_FAILURES} consecutive failed attempts the endpoint is disabled and its
organization's owners are notified (<code>GET /api/notifications</code>, and email where SMTP is set up). Before every attempt the URL is
checked again with fresh DNS, and the service connects only to the addresses that passed (public ones, or private ones the operator
allows: <code>SORTIE_WEBHOOK_ALLOW_CIDRS</code>, or <code>npm run admin -- webhook-trust add</code> while the service runs).</p>
<p class="note">API keys go in <code>${API_KEY_HEADER}</code> for the HTTP API; deliveries never carry one. This service's ack URL base is
<code>${esc(settings.publicUrl)}</code> (<code>SORTIE_PUBLIC_URL</code>).</p>
`;
  return guidePage('Webhook delivery', body);
}
