// First: zod's configuration, before any schema is built or parsed (zod-jitless.ts says why).
import './zod-jitless.ts';
import './styles.css';
import 'uplot/dist/uPlot.min.css';
import type { ConsoleSession } from '@sortie/contracts';
import { h, render, type VNode } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { createConsoleApi, type ConsoleApi } from './api.ts';
import { DataView } from './data-view.ts';
import { formatLocation, parseLocation, type ConsoleLocation } from './url-state.ts';
import { WebhooksView } from './webhooks-view.ts';

// The key lives only here: sessionStorage (gone when the tab closes), never localStorage, a cookie or the URL.
const KEY_ITEM = 'sortie.apiKey';

function App(): VNode<any> {
  const [api, setApi] = useState<ConsoleApi | undefined>();
  const [session, setSession] = useState<ConsoleSession | undefined>();
  const [error, setError] = useState('');
  const [location, setLocation] = useState<ConsoleLocation>(() => parseLocation(window.location.search));

  const signIn = useCallback(async (key: string) => {
    const candidate = createConsoleApi(key);
    try {
      const s = await candidate.session();
      sessionStorage.setItem(KEY_ITEM, key);
      setApi(() => candidate);
      setSession(s);
      setError('');
    } catch (e) {
      sessionStorage.removeItem(KEY_ITEM);
      setError(e instanceof Error ? e.message : String(e));
    }
  }, []);

  useEffect(() => {
    const stored = sessionStorage.getItem(KEY_ITEM);
    if (stored) void signIn(stored);
    const onPop = () => setLocation(parseLocation(window.location.search));
    window.addEventListener('popstate', onPop);
    return () => window.removeEventListener('popstate', onPop);
  }, []);

  const navigate = useCallback((next: ConsoleLocation, replace = false) => {
    setLocation(next);
    const url = `${window.location.pathname}${formatLocation(next)}`;
    if (replace) history.replaceState(null, '', url);
    else history.pushState(null, '', url);
  }, []);

  if (!api || !session) return h(SignIn, { onSubmit: signIn, error });

  const signOut = () => {
    sessionStorage.removeItem(KEY_ITEM);
    setApi(undefined);
    setSession(undefined);
  };
  return h('div', { class: 'shell' }, [
    h('header', { class: 'top' }, [
      h('span', { class: 'brand' }, 'Sortie'),
      h('nav', { 'aria-label': 'Console' }, [
        h('a', { href: '?', 'aria-current': location.view === 'data' ? 'page' : undefined, onClick: (e: Event) => (e.preventDefault(), navigate({ view: 'data', channels: [] })) }, 'Flights and data'),
        h('a', { href: '?view=webhooks', 'aria-current': location.view === 'webhooks' ? 'page' : undefined, onClick: (e: Event) => (e.preventDefault(), navigate({ view: 'webhooks', channels: [] })) }, 'Webhooks'),
      ]),
      h('div', { class: 'who' }, [
        h('span', { 'data-testid': 'organization' }, `Organization: ${session.organization.name || session.organization.id}`),
        h('ul', { class: 'scopes', 'aria-label': "This key's scopes" }, session.scopes.map((s) => h('li', { key: s }, s))),
        h('button', { type: 'button', onClick: signOut }, 'Sign out'),
      ]),
    ]),
    h('main', { id: 'main' }, location.view === 'webhooks' ? h(WebhooksView, { api, session }) : h(DataView, { api, session, location, navigate })),
  ]);
}

function SignIn(props: { onSubmit: (key: string) => void; error: string }): VNode<any> {
  const [key, setKey] = useState('');
  return h('main', { class: 'signin' }, [
    h('h1', null, 'Sortie console'),
    h(
      'form',
      {
        onSubmit: (e: Event) => {
          e.preventDefault();
          if (key.trim()) props.onSubmit(key.trim());
        },
      },
      [
        h('label', { for: 'api-key' }, 'API key'),
        h('input', { id: 'api-key', name: 'api-key', type: 'password', autocomplete: 'off', spellcheck: false, value: key, onInput: (e: Event) => setKey((e.target as HTMLInputElement).value) }),
        h('p', { class: 'muted' }, 'Kept in this tab only (session storage) and sent as the x-api-key header.'),
        h('p', { class: 'muted' }, [
          'No key yet? On the server: ',
          h('code', null, 'npm run -s admin -- create-org --name "…"'),
          ', then ',
          h('code', null, 'npm run -s admin -- create-key --org <id> --user <ownerUserId> --scopes …'),
          ' (README, the first hour: both work while Sortie runs).',
        ]),
        h('button', { type: 'submit' }, 'Sign in'),
        props.error ? h('p', { class: 'error', role: 'alert' }, props.error) : null,
      ],
    ),
  ]);
}

render(h(App, null), document.getElementById('app')!);
