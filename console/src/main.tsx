import './styles.css';
import 'uplot/dist/uPlot.min.css';
import type { ConsoleSession } from '@sortie/contracts';
import { render, type VNode } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { createConsoleApi, type ConsoleApi } from './api.ts';
import { DataView } from './data-view.tsx';
import { formatLocation, parseLocation, type ConsoleLocation } from './url-state.ts';
import { WebhooksView } from './webhooks-view.tsx';
import { onValue } from './actions.ts';
import { ErrorAlert } from './error-alert.tsx';

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

  if (!api || !session) return <SignIn onSubmit={signIn} error={error} />;

  const signOut = () => {
    sessionStorage.removeItem(KEY_ITEM);
    setApi(undefined);
    setSession(undefined);
  };
  return (
    <div class="shell">
      <header class="top">
        <span class="brand">Sortie</span>
        <nav aria-label="Console">
          <a
            href="?"
            aria-current={location.view === 'data' ? 'page' : undefined}
            onClick={(e: Event) => (e.preventDefault(), navigate({ view: 'data', channels: [] }))}
          >
            Flights and data
          </a>
          <a
            href="?view=webhooks"
            aria-current={location.view === 'webhooks' ? 'page' : undefined}
            onClick={(e: Event) => (e.preventDefault(), navigate({ view: 'webhooks', channels: [] }))}
          >
            Webhooks
          </a>
        </nav>
        <div class="who">
          <span data-testid="organization">{`Organization: ${session.organization.name || session.organization.id}`}</span>
          <ul class="scopes" aria-label="This key's scopes">
            {session.scopes.map((s) => (
              <li key={s}>{s}</li>
            ))}
          </ul>
          <button type="button" onClick={signOut}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main">
        {location.view === 'webhooks' ? (
          <WebhooksView api={api} session={session} />
        ) : (
          <DataView api={api} session={session} location={location} navigate={navigate} />
        )}
      </main>
    </div>
  );
}

function SignIn(props: { onSubmit: (key: string) => void; error: string }): VNode<any> {
  const [key, setKey] = useState('');
  return (
    <main class="signin">
      <h1>Sortie console</h1>
      <form
        onSubmit={(e: Event) => {
          e.preventDefault();
          if (key.trim()) props.onSubmit(key.trim());
        }}
      >
        <label for="api-key">API key</label>
        <input id="api-key" name="api-key" type="password" autocomplete="off" spellcheck={false} value={key} onInput={onValue(setKey)} />
        <p class="muted">Kept in this tab only (session storage) and sent as the x-api-key header.</p>
        <p class="muted">
          {'No key yet? On the server: '}
          <code>npm run -s admin -- create-org --name "…"</code>
          {', then '}
          <code>{'npm run -s admin -- create-key --org <id> --user <ownerUserId> --scopes …'}</code>
          {' (README, the first hour: both work while Sortie runs).'}
        </p>
        <button type="submit">Sign in</button>
        <ErrorAlert error={props.error} />
      </form>
    </main>
  );
}

render(<App />, document.getElementById('app')!);
