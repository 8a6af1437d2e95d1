import type { ConsoleSession, DeliveryAttempt, Notification, WebhookEndpoint, WebhookEndpointWithSecret } from '@sortie/contracts';
import type { VNode } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { ConsoleApi } from './api.ts';
import { formatIso } from './format.ts';
import { need } from './scopes.tsx';
import { actRunner, errorText, onValue } from './actions.ts';
import { ErrorAlert } from './error-alert.tsx';

/** The endpoint's latest delivery attempt as the list says it: what the receiver answered, and when. */
function lastAttemptText(ep: WebhookEndpoint): string {
  const last = ep.lastAttempt;
  if (!last) return 'No delivery attempted yet';
  const answer = last.statusCode === 0 ? `no answer${last.error ? ` (${last.error})` : ''}` : `HTTP ${last.statusCode}`;
  return `Last attempt: ${answer}, ${formatIso(last.at)}`;
}

export function WebhooksView(props: { api: ConsoleApi; session: ConsoleSession }): VNode<any> {
  const { api, session } = props;
  const read = need(session.scopes, 'webhooks:read');
  const write = need(session.scopes, 'webhooks:write');
  const [endpoints, setEndpoints] = useState<WebhookEndpoint[] | undefined>();
  const [notifications, setNotifications] = useState<Notification[]>([]);
  const [secret, setSecret] = useState<WebhookEndpointWithSecret | undefined>();
  const [tests, setTests] = useState<Record<string, DeliveryAttempt | string>>({});
  const [error, setError] = useState('');
  const [refresh, setRefresh] = useState(0);
  const [label, setLabel] = useState('');
  const [url, setUrl] = useState('');
  const [copied, setCopied] = useState(false);

  useEffect(() => {
    if (read.disabled) return;
    api.webhooks().then(setEndpoints, (e: unknown) => setError(errorText(e)));
    api.notifications().then(setNotifications, () => setNotifications([]));
  }, [api, refresh]);

  const act = actRunner(setError, () => setRefresh((n) => n + 1));

  return (
    <div class="webhooks">
      <h2>Webhook endpoints</h2>
      {read.note}
      <ErrorAlert error={error} />
      {secret ? (
        <div class="secret" role="status">
          <p>
            <strong>{'Signing secret for '}</strong>
            {secret.label}
            <strong>{' — shown once, copy it now:'}</strong>
          </p>
          <code data-testid="webhook-secret">{secret.secret}</code>
          <button
            type="button"
            onClick={() =>
              navigator.clipboard.writeText(secret.secret).then(
                () => setCopied(true),
                () => setCopied(false),
              )
            }
          >
            {copied ? 'Copied' : 'Copy'}
          </button>
          <button type="button" onClick={() => (setSecret(undefined), setCopied(false))}>
            I have stored it
          </button>
        </div>
      ) : null}
      <form
        class="create-webhook"
        aria-label="Add an endpoint"
        onSubmit={(e: Event) => {
          e.preventDefault();
          void act(async () => {
            const created = await api.createWebhook({ label, url });
            setSecret(created);
            setCopied(false);
            setLabel('');
            setUrl('');
          });
        }}
      >
        <label for="hook-label">Label</label>
        <input id="hook-label" value={label} disabled={write.disabled} onInput={onValue(setLabel)} />
        <label for="hook-url">URL (https)</label>
        <input id="hook-url" type="url" value={url} disabled={write.disabled} placeholder="https://receiver.example:8443/hooks" onInput={onValue(setUrl)} />
        <button type="submit" disabled={write.disabled || !label || !url}>
          Add endpoint
        </button>
        {write.note}
      </form>
      {endpoints && endpoints.length === 0 ? <p class="muted">No endpoints yet.</p> : null}
      {endpoints && endpoints.length > 0 ? (
        <table class="endpoints">
          <caption>Endpoints</caption>
          <thead>
            <tr>
              {['Label', 'URL', 'State', 'Actions'].map((t) => (
                <th scope="col">{t}</th>
              ))}
            </tr>
          </thead>
          <tbody>
            {endpoints.map((ep) => {
              const test = tests[ep.id];
              return (
                <tr key={ep.id} data-endpoint={ep.id}>
                  <td>{ep.label}</td>
                  <td>
                    <code>{ep.url}</code>
                  </td>
                  <td>
                    {ep.disabledAt ? (
                      <span class="chip chip-nacked" data-testid="endpoint-state">
                        disabled
                      </span>
                    ) : (
                      <span class="chip chip-acked" data-testid="endpoint-state">
                        enabled
                      </span>
                    )}
                    {!ep.disabledAt && ep.consecutiveFailures > 0 ? (
                      <span
                        class="chip chip-failing"
                        data-testid="endpoint-failures"
                        title="disabled after 20 failed attempts in a row"
                      >{`failing: ${ep.consecutiveFailures} in a row`}</span>
                    ) : null}
                    {ep.disabledAt ? (
                      <div data-testid="endpoint-disabled">{`Disabled ${formatIso(ep.disabledAt)}${ep.disabledReason ? `: ${ep.disabledReason}` : ''}`}</div>
                    ) : null}
                    <div class="muted" data-testid="endpoint-last">
                      {lastAttemptText(ep)}
                    </div>
                    {ep.rotatingUntil ? <div>{`Rotating: the previous secret is accepted until ${formatIso(ep.rotatingUntil)}`}</div> : null}
                  </td>
                  <td>
                    <div class="row-actions">
                      <button
                        type="button"
                        disabled={write.disabled || Boolean(ep.disabledAt)}
                        title={ep.disabledAt ? 'disabled endpoints are not sent to; delete it and register it anew' : undefined}
                        onClick={() =>
                          void api.testWebhook(ep.id).then(
                            (attempt) => setTests({ ...tests, [ep.id]: attempt }),
                            (e: unknown) => setTests({ ...tests, [ep.id]: errorText(e) }),
                          )
                        }
                      >
                        Send test event
                      </button>
                      <button
                        type="button"
                        disabled={write.disabled}
                        onClick={() => void act(async () => setSecret(await api.rotateWebhook({ id: ep.id, overlapSeconds: 86_400 })))}
                      >
                        Rotate secret
                      </button>
                      <button
                        type="button"
                        disabled={write.disabled}
                        onClick={() => confirm(`Delete the endpoint ${ep.label}?`) && void act(() => api.deleteWebhook(ep.id))}
                      >
                        Delete
                      </button>
                      {write.note}
                    </div>
                    {test ? (
                      typeof test === 'string' ? (
                        <p class="error" role="alert">{`Test event failed: ${test}`}</p>
                      ) : (
                        <p role="status" data-testid="test-result">
                          <span class={`chip ${test.statusCode >= 200 && test.statusCode < 300 ? 'chip-acked' : 'chip-nacked'}`}>
                            {test.statusCode === 0 ? 'no answer' : `HTTP ${test.statusCode}`}
                          </span>
                          {` ping in ${test.durationMs} ms${test.error ? ` — ${test.error}` : ''}`}
                        </p>
                      )
                    ) : null}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      ) : null}
      <h2>Notifications</h2>
      {notifications.length === 0 ? (
        <p class="muted">{read.disabled ? '' : 'No notifications.'}</p>
      ) : (
        <ul class="notifications">
          {notifications.map((n) => (
            <li key={n.id} data-kind={n.kind}>
              <strong>{n.subject}</strong>
              {` ${formatIso(n.createdAt)}`}
              <p>{n.message}</p>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
