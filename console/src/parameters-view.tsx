// A flight's parameters: what it started and ended with and how often each changed in flight, with a
// filter and a changed-only toggle; and the difference with another flight's, at the start or the end of
// both (what a test engineer asks first when two flights of one vehicle behaved differently).
import type { FlightParameters, ParameterDiff } from '@sortie/contracts';
import type { VNode } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import type { ConsoleApi } from './api.ts';
import { formatIso } from './format.ts';
import { filterDiff, filterParameters, formatParameter } from './parameter-logic.ts';
import { checkedOf, onValue, valueOf } from './actions.ts';

/** Another flight to compare with, as the picker lists it. */
export interface FlightChoice {
  id: string;
  name: string;
  experimentName: string;
}

interface Props {
  api: ConsoleApi;
  experimentId: string;
  datasetId: string;
  datasetName: string;
  /** Flights this one can be compared with (every other flight the key can read). */
  flights: FlightChoice[];
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export function ParametersView(props: Props): VNode<any> {
  const { api, experimentId, datasetId } = props;
  const [parameters, setParameters] = useState<FlightParameters | undefined>();
  const [error, setError] = useState('');
  const [filter, setFilter] = useState('');
  const [changedOnly, setChangedOnly] = useState(false);
  const [other, setOther] = useState('');
  const [at, setAt] = useState<'initial' | 'final'>('initial');
  const [diff, setDiff] = useState<ParameterDiff | undefined>();
  const [diffError, setDiffError] = useState('');

  useEffect(() => {
    let current = true;
    api.parameters(experimentId, datasetId).then(
      (p) => current && setParameters(p),
      (e: unknown) => current && setError(errorText(e)),
    );
    return () => {
      current = false;
    };
  }, [api, experimentId, datasetId]);

  useEffect(() => {
    setDiff(undefined);
    setDiffError('');
    if (!other) return;
    let current = true;
    api.parameterDiff(datasetId, other, at).then(
      (d) => current && setDiff(d),
      (e: unknown) => current && setDiffError(errorText(e)),
    );
    return () => {
      current = false;
    };
  }, [api, datasetId, other, at]);

  const shown = useMemo(() => (parameters ? filterParameters(parameters.parameters, filter, changedOnly) : []), [parameters, filter, changedOnly]);
  const changed = useMemo(() => parameters?.parameters.filter((p) => p.changes.length > 0).length ?? 0, [parameters]);
  const shownDiff = useMemo(() => diff && filterDiff(diff, filter), [diff, filter]);
  const otherName = props.flights.find((f) => f.id === other)?.name ?? 'the other flight';

  return (
    <section class="parameters" aria-labelledby="parameters-title">
      <h3 id="parameters-title">Parameters</h3>
      {error ? <p class="error" role="alert">{`Parameters unavailable: ${error}`}</p> : null}
      {!parameters && !error ? <p class="muted">Loading parameters…</p> : null}
      {parameters ? (
        <p class="muted" data-testid="parameters-summary">
          {`${parameters.parameters.length.toLocaleString('en-US')} parameters ${parameters.source === 'log' ? "from the vehicle's log" : 'from its PARAM_VALUE messages'}`}
          {`, ${changed} changed during the flight.`}
        </p>
      ) : null}
      <div class="param-controls">
        <label for="parameter-filter">Filter parameters</label>
        <input id="parameter-filter" type="search" value={filter} placeholder="e.g. MC_ROLL or PILOT" onInput={onValue(setFilter)} />
        <label class="inline">
          <input type="checkbox" checked={changedOnly} onChange={(e: Event) => setChangedOnly(checkedOf(e))} />
          {' Changed during the flight only'}
        </label>
      </div>
      <h4>Compare with another flight</h4>
      <div class="param-controls">
        <label for="parameter-compare">Compare with…</label>
        <select id="parameter-compare" value={other} onChange={onValue(setOther)}>
          <option value="">— choose a flight —</option>
          {props.flights.map((f) => (
            <option key={f.id} value={f.id}>{`${f.name} (${f.experimentName})`}</option>
          ))}
        </select>
        <label for="parameter-at">Compare values</label>
        <select id="parameter-at" value={at} onChange={(e: Event) => setAt(valueOf(e) as 'initial' | 'final')}>
          <option value="initial">at the start of both flights</option>
          <option value="final">at the end of both flights</option>
        </select>
      </div>
      {diffError ? <p class="error" role="alert">{`Comparison unavailable: ${diffError}`}</p> : null}
      {other && !diff && !diffError ? <p class="muted">Comparing…</p> : null}
      {shownDiff ? (
        <div class="param-diff">
          <p
            role="status"
            data-testid="diff-summary"
          >{`${diff!.changed.length} changed, ${diff!.added.length} only in ${otherName}, ${diff!.removed.length} only in ${props.datasetName}, ${diff!.unchanged} the same${filter ? ` (the table shows those matching “${filter}”)` : ''}.`}</p>
          <div class="param-table" role="region" aria-label="Parameter differences table" tabIndex={0}>
            <table data-testid="parameter-diff">
              <caption>{`${props.datasetName} against ${otherName}, ${at === 'initial' ? 'at the start' : 'at the end'}`}</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">{props.datasetName}</th>
                  <th scope="col">{otherName}</th>
                  <th scope="col">Difference</th>
                </tr>
              </thead>
              <tbody>
                {shownDiff.changed.map((p) => (
                  <tr key={`c${p.name}`} data-diff="changed" data-parameter={p.name}>
                    <th scope="row">{p.name}</th>
                    <td>{formatParameter(p.a)}</td>
                    <td>{formatParameter(p.b)}</td>
                    <td>changed</td>
                  </tr>
                ))}
                {shownDiff.added.map((p) => (
                  <tr key={`a${p.name}`} data-diff="added" data-parameter={p.name}>
                    <th scope="row">{p.name}</th>
                    <td>—</td>
                    <td>{formatParameter(p.value)}</td>
                    <td>{`only in ${otherName}`}</td>
                  </tr>
                ))}
                {shownDiff.removed.map((p) => (
                  <tr key={`r${p.name}`} data-diff="removed" data-parameter={p.name}>
                    <th scope="row">{p.name}</th>
                    <td>{formatParameter(p.value)}</td>
                    <td>—</td>
                    <td>{`only in ${props.datasetName}`}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </div>
      ) : null}
      {parameters ? (
        // Scrolled on its own, so reachable by keyboard too (a focusable, named region).
        <div class="param-table" role="region" aria-label="Parameters table" tabIndex={0}>
          <table data-testid="parameters">
            <caption>{`${shown.length.toLocaleString('en-US')} of ${parameters.parameters.length.toLocaleString('en-US')} parameters of ${props.datasetName}`}</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Initial</th>
                <th scope="col">Final</th>
                <th scope="col">Changes</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((p) => (
                <tr key={p.name} data-parameter={p.name}>
                  <th scope="row">{p.name}</th>
                  <td>{formatParameter(p.initial)}</td>
                  <td class={p.changes.length > 0 ? 'param-changed' : undefined}>{formatParameter(p.final)}</td>
                  <td>
                    {p.changes.length === 0 ? (
                      '0'
                    ) : (
                      <details>
                        <summary>{String(p.changes.length)}</summary>
                        <ul class="times">
                          {p.changes.map((c, i) => (
                            <li key={i}>{`${c.timestamp ? formatIso(c.timestamp) : 'time unknown'}: ${formatParameter(c.value)}`}</li>
                          ))}
                        </ul>
                      </details>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  );
}
