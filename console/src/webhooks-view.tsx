import type { ConsoleSession, DeliveryAttempt, Notification, WebhookEndpoint, WebhookEndpointWithSecret } from '@sortie/contracts';
import { h, type VNode } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { SortieApiError, type ConsoleApi } from './api.ts';
import { formatIso } from './format.ts';
import { need } from './scopes.ts';

function message(e: unknown): string {
  if (e instanceof SortieApiError) return `${e.message}${e.details.length ? ` (${e.details.map((d) => `${d.field}: ${d.message}`).join('; ')})` : ''}`;
  return e instanceof Error ? e.message : String(e);
}

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
    api.webhooks().then(setEndpoints, (e: unknown) => setError(message(e)));
    api.notifications().then(setNotifications, () => setNotifications([]));
  }, [api, refresh]);

  const act = async (what: () => Promise<unknown>) => {
    try {
      await what();
      setError('');
    } catch (e) {
      setError(message(e));
    }
    setRefresh((n) => n + 1);
  };

  return h('div', { class: 'webhooks' }, [
    h('h2', null, 'Webhook endpoints'),
    read.note,
    error ? h('p', { class: 'error', role: 'alert' }, error) : null,
    secret
      ? h('div', { class: 'secret', role: 'status' }, [
          h('p', null, [h('strong', null, 'Signing secret for '), secret.label, h('strong', null, ' — shown once, copy it now:')]),
          h('code', { 'data-testid': 'webhook-secret' }, secret.secret),
          h(
            'button',
            {
              type: 'button',
              onClick: () =>
                navigator.clipboard.writeText(secret.secret).then(
                  () => setCopied(true),
                  () => setCopied(false),
                ),
            },
            copied ? 'Copied' : 'Copy',
          ),
          h('button', { type: 'button', onClick: () => (setSecret(undefined), setCopied(false)) }, 'I have stored it'),
        ])
      : null,
    h(
      'form',
      {
        class: 'create-webhook',
        'aria-label': 'Add an endpoint',
        onSubmit: (e: Event) => {
          e.preventDefault();
          void act(async () => {
            const created = await api.createWebhook({ label, url });
            setSecret(created);
            setCopied(false);
            setLabel('');
            setUrl('');
          });
        },
      },
      [
        h('label', { for: 'hook-label' }, 'Label'),
        h('input', { id: 'hook-label', value: label, disabled: write.disabled, onInput: (e: Event) => setLabel((e.target as HTMLInputElement).value) }),
        h('label', { for: 'hook-url' }, 'URL (https)'),
        h('input', { id: 'hook-url', type: 'url', value: url, disabled: write.disabled, placeholder: 'https://receiver.example:8443/hooks', onInput: (e: Event) => setUrl((e.target as HTMLInputElement).value) }),
        h('button', { type: 'submit', disabled: write.disabled || !label || !url }, 'Add endpoint'),
        write.note,
      ],
    ),
    endpoints && endpoints.length === 0 ? h('p', { class: 'muted' }, 'No endpoints yet.') : null,
    endpoints && endpoints.length > 0
      ? h('table', { class: 'endpoints' }, [
          h('caption', null, 'Endpoints'),
          h('thead', null, h('tr', null, ['Label', 'URL', 'State', 'Actions'].map((t) => h('th', { scope: 'col' }, t)))),
          h(
            'tbody',
            null,
            endpoints.map((ep) => {
              const test = tests[ep.id];
              return h('tr', { key: ep.id, 'data-endpoint': ep.id }, [
                h('td', null, ep.label),
                h('td', null, h('code', null, ep.url)),
                h('td', null, [
                  ep.disabledAt
                    ? h('span', { class: 'chip chip-nacked', 'data-testid': 'endpoint-state' }, 'disabled')
                    : h('span', { class: 'chip chip-acked', 'data-testid': 'endpoint-state' }, 'enabled'),
                  // An endpoint whose deliveries fail must not read as plainly enabled: its streak, toward the auto-disable.
                  !ep.disabledAt && ep.consecutiveFailures > 0
                    ? h('span', { class: 'chip chip-failing', 'data-testid': 'endpoint-failures', title: 'disabled after 20 failed attempts in a row' }, `failing: ${ep.consecutiveFailures} in a row`)
                    : null,
                  ep.disabledAt ? h('div', { 'data-testid': 'endpoint-disabled' }, `Disabled ${formatIso(ep.disabledAt)}${ep.disabledReason ? `: ${ep.disabledReason}` : ''}`) : null,
                  h('div', { class: 'muted', 'data-testid': 'endpoint-last' }, lastAttemptText(ep)),
                  ep.rotatingUntil ? h('div', null, `Rotating: the previous secret is accepted until ${formatIso(ep.rotatingUntil)}`) : null,
                ]),
                h('td', null, [
                  h('div', { class: 'row-actions' }, [
                    h(
                      'button',
                      {
                        type: 'button',
                        // A disabled endpoint is not sent to (the server answers 409): say so instead of offering it.
                        disabled: write.disabled || Boolean(ep.disabledAt),
                        title: ep.disabledAt ? 'disabled endpoints are not sent to; delete it and register it anew' : undefined,
                        onClick: () =>
                          void api.testWebhook(ep.id).then(
                            (attempt) => setTests({ ...tests, [ep.id]: attempt }),
                            (e: unknown) => setTests({ ...tests, [ep.id]: message(e) }),
                          ),
                      },
                      'Send test event',
                    ),
                    h('button', { type: 'button', disabled: write.disabled, onClick: () => void act(async () => setSecret(await api.rotateWebhook({ id: ep.id, overlapSeconds: 86_400 }))) }, 'Rotate secret'),
                    h('button', { type: 'button', disabled: write.disabled, onClick: () => confirm(`Delete the endpoint ${ep.label}?`) && void act(() => api.deleteWebhook(ep.id)) }, 'Delete'),
                    write.note,
                  ]),
                  test
                    ? typeof test === 'string'
                      ? h('p', { class: 'error', role: 'alert' }, `Test event failed: ${test}`)
                      : h('p', { role: 'status', 'data-testid': 'test-result' }, [
                          h('span', { class: `chip ${test.statusCode >= 200 && test.statusCode < 300 ? 'chip-acked' : 'chip-nacked'}` }, test.statusCode === 0 ? 'no answer' : `HTTP ${test.statusCode}`),
                          ` ping in ${test.durationMs} ms${test.error ? ` — ${test.error}` : ''}`,
                        ])
                    : null,
                ]),
              ]);
            }),
          ),
        ])
      : null,
    h('h2', null, 'Notifications'),
    notifications.length === 0
      ? h('p', { class: 'muted' }, read.disabled ? '' : 'No notifications.')
      : h(
          'ul',
          { class: 'notifications' },
          notifications.map((n) => h('li', { key: n.id, 'data-kind': n.kind }, [h('strong', null, n.subject), ` ${formatIso(n.createdAt)}`, h('p', null, n.message)])),
        ),
  ]);
}
