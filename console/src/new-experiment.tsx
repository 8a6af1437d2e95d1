// A new experiment from the list view: what the edge agent needs before its first flight (it takes the
// experiment's id and registers its datasets itself), so a newcomer needs neither curl nor the CLI. Once
// made, the page says how to stream a flight into it.
import type { ConsoleSession, Experiment } from '@sortie/contracts';
import type { VNode } from 'preact';
import { useState } from 'preact/hooks';
import type { ConsoleApi } from './api.ts';
import { need } from './scopes.tsx';
import { errorText, onValue } from './actions.ts';
import { ErrorAlert } from './error-alert.tsx';

export function NewExperiment(props: { api: ConsoleApi; session: ConsoleSession; onCreated: (experiment: Experiment) => void }): VNode<any> {
  const write = need(props.session.scopes, 'datasets:write');
  const [name, setName] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const [created, setCreated] = useState<Experiment | undefined>();

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    try {
      const experiment = await props.api.createExperiment({ name });
      setCreated(experiment);
      setName('');
      setError('');
      props.onCreated(experiment);
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <div class="new-experiment">
      <form aria-label="New experiment" onSubmit={(e: Event) => void submit(e)}>
        <label for="experiment-name">New experiment</label>
        <div class="inline">
          <input id="experiment-name" value={name} maxLength={200} placeholder="Hover test 12" disabled={write.disabled} onInput={onValue(setName)} />
          <button type="submit" disabled={write.disabled || busy || name.trim() === ''}>
            Create
          </button>
        </div>
        {write.note}
      </form>
      <ErrorAlert error={error} />
      {created ? (
        <div class="agent-hint" role="status">
          <p>
            <strong>{created.name}</strong>
            {' created. Stream a flight into it with the edge agent:'}
          </p>
          <code data-testid="agent-command">{`npm run agent -- --experiment ${created.id} --source file:flight.tlog --spool-dir .sortie-data/agent-spool`}</code>
          <p class="muted">with SORTIE_URL and SORTIE_API_KEY exported, as for the sortie CLI (README, quick start).</p>
        </div>
      ) : null}
    </div>
  );
}
