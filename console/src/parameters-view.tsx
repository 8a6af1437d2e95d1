// A flight's parameters: what it started and ended with and how often each changed in flight, with a
// filter and a changed-only toggle; and the difference with another flight's, at the start or the end of
// both (what a test engineer asks first when two flights of one vehicle behaved differently).
import type { FlightParameters, ParameterDiff } from '@sortie/contracts';
import { h, type VNode } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import type { ConsoleApi } from './api.ts';
import { formatIso } from './format.ts';
import { filterDiff, filterParameters, formatParameter } from './parameter-logic.ts';

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

  return h('section', { class: 'parameters', 'aria-labelledby': 'parameters-title' }, [
    h('h3', { id: 'parameters-title' }, 'Parameters'),
    error ? h('p', { class: 'error', role: 'alert' }, `Parameters unavailable: ${error}`) : null,
    !parameters && !error ? h('p', { class: 'muted' }, 'Loading parameters…') : null,
    parameters
      ? h('p', { class: 'muted', 'data-testid': 'parameters-summary' }, [
          `${parameters.parameters.length.toLocaleString('en-US')} parameters ${parameters.source === 'log' ? "from the vehicle's log" : 'from its PARAM_VALUE messages'}`,
          `, ${changed} changed during the flight.`,
        ])
      : null,
    h('div', { class: 'param-controls' }, [
      h('label', { for: 'parameter-filter' }, 'Filter parameters'),
      h('input', { id: 'parameter-filter', type: 'search', value: filter, placeholder: 'e.g. MC_ROLL or PILOT', onInput: (e: Event) => setFilter((e.target as HTMLInputElement).value) }),
      h('label', { class: 'inline' }, [h('input', { type: 'checkbox', checked: changedOnly, onChange: (e: Event) => setChangedOnly((e.target as HTMLInputElement).checked) }), ' Changed during the flight only']),
    ]),
    // The comparison first when one is chosen: it is what was asked; the whole list follows.
    h('h4', null, 'Compare with another flight'),
    h('div', { class: 'param-controls' }, [
      h('label', { for: 'parameter-compare' }, 'Compare with…'),
      h(
        'select',
        { id: 'parameter-compare', value: other, onChange: (e: Event) => setOther((e.target as HTMLSelectElement).value) },
        [h('option', { value: '' }, '— choose a flight —'), ...props.flights.map((f) => h('option', { key: f.id, value: f.id }, `${f.name} (${f.experimentName})`))],
      ),
      h('label', { for: 'parameter-at' }, 'Compare values'),
      h('select', { id: 'parameter-at', value: at, onChange: (e: Event) => setAt((e.target as HTMLSelectElement).value as 'initial' | 'final') }, [
        h('option', { value: 'initial' }, 'at the start of both flights'),
        h('option', { value: 'final' }, 'at the end of both flights'),
      ]),
    ]),
    diffError ? h('p', { class: 'error', role: 'alert' }, `Comparison unavailable: ${diffError}`) : null,
    other && !diff && !diffError ? h('p', { class: 'muted' }, 'Comparing…') : null,
    shownDiff
      ? h('div', { class: 'param-diff' }, [
          h(
            'p',
            { role: 'status', 'data-testid': 'diff-summary' },
            `${diff!.changed.length} changed, ${diff!.added.length} only in ${otherName}, ${diff!.removed.length} only in ${props.datasetName}, ${diff!.unchanged} the same${filter ? ` (the table shows those matching “${filter}”)` : ''}.`,
          ),
          h('div', { class: 'param-table', role: 'region', 'aria-label': 'Parameter differences table', tabIndex: 0 }, [
            h('table', { 'data-testid': 'parameter-diff' }, [
              h('caption', null, `${props.datasetName} against ${otherName}, ${at === 'initial' ? 'at the start' : 'at the end'}`),
              h('thead', null, h('tr', null, [h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, props.datasetName), h('th', { scope: 'col' }, otherName), h('th', { scope: 'col' }, 'Difference')])),
              h('tbody', null, [
                ...shownDiff.changed.map((p) => h('tr', { key: `c${p.name}`, 'data-diff': 'changed', 'data-parameter': p.name }, [h('th', { scope: 'row' }, p.name), h('td', null, formatParameter(p.a)), h('td', null, formatParameter(p.b)), h('td', null, 'changed')])),
                ...shownDiff.added.map((p) => h('tr', { key: `a${p.name}`, 'data-diff': 'added', 'data-parameter': p.name }, [h('th', { scope: 'row' }, p.name), h('td', null, '—'), h('td', null, formatParameter(p.value)), h('td', null, `only in ${otherName}`)])),
                ...shownDiff.removed.map((p) => h('tr', { key: `r${p.name}`, 'data-diff': 'removed', 'data-parameter': p.name }, [h('th', { scope: 'row' }, p.name), h('td', null, formatParameter(p.value)), h('td', null, '—'), h('td', null, `only in ${props.datasetName}`)])),
              ]),
            ]),
          ]),
        ])
      : null,
    parameters
      ? // Scrolled on its own, so reachable by keyboard too (a focusable, named region).
        h('div', { class: 'param-table', role: 'region', 'aria-label': 'Parameters table', tabIndex: 0 }, [
          h('table', { 'data-testid': 'parameters' }, [
            h('caption', null, `${shown.length.toLocaleString('en-US')} of ${parameters.parameters.length.toLocaleString('en-US')} parameters of ${props.datasetName}`),
            h('thead', null, h('tr', null, [h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, 'Initial'), h('th', { scope: 'col' }, 'Final'), h('th', { scope: 'col' }, 'Changes')])),
            h(
              'tbody',
              null,
              shown.map((p) =>
                h('tr', { key: p.name, 'data-parameter': p.name }, [
                  h('th', { scope: 'row' }, p.name),
                  h('td', null, formatParameter(p.initial)),
                  h('td', { class: p.changes.length > 0 ? 'param-changed' : undefined }, formatParameter(p.final)),
                  h(
                    'td',
                    null,
                    p.changes.length === 0
                      ? '0'
                      : h('details', null, [
                          h('summary', null, String(p.changes.length)),
                          h('ul', { class: 'times' }, p.changes.map((c, i) => h('li', { key: i }, `${c.timestamp ? formatIso(c.timestamp) : 'time unknown'}: ${formatParameter(c.value)}`))),
                        ]),
                  ),
                ]),
              ),
            ),
          ]),
        ])
      : null,
  ]);
}
