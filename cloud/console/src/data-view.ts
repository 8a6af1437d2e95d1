import type { Channel, CommandRecord, ConsoleSession, Experiment, TimelineEvent } from '@sortie/contracts';
import { h, type VNode } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import type { ConsoleApi } from './api.ts';
import { CommandsPanel } from './commands-panel.ts';
import { FlightView } from './flight-view.ts';
import { formatIso } from './format.ts';
import { marksOf } from './marks.ts';
import { Plot, type PlotAxis, type PlotWindow } from './plot.ts';
import { need } from './scopes.ts';
import { groupChannels, plottable, queryChannelId, systemIdOf } from './signals.ts';
import type { ConsoleLocation } from './url-state.ts';

interface Props {
  api: ConsoleApi;
  session: ConsoleSession;
  location: ConsoleLocation;
  navigate: (next: ConsoleLocation, replace?: boolean) => void;
}

export function DataView(props: Props): VNode<any> {
  const { api, session, location, navigate } = props;
  const [experiments, setExperiments] = useState<Experiment[] | undefined>();
  const [error, setError] = useState('');
  const canRead = session.scopes.includes('datasets:read');

  useEffect(() => {
    if (!canRead) return;
    api.experiments().then(setExperiments, (e: unknown) => setError(String(e instanceof Error ? e.message : e)));
  }, [api]);

  const dataset = useMemo(() => {
    for (const e of experiments ?? []) for (const d of e.datasets) if (d.id === location.datasetId) return d;
    return undefined;
  }, [experiments, location.datasetId]);

  const readNeed = need(session.scopes, 'datasets:read');
  return h('div', { class: 'data-view' }, [
    h('aside', { class: 'browser', 'aria-label': 'Experiments and datasets' }, [
      h('h2', null, 'Experiments'),
      readNeed.note,
      error ? h('p', { class: 'error', role: 'alert' }, error) : null,
      experiments === undefined && canRead ? h('p', { class: 'muted' }, 'Loading…') : null,
      experiments?.length === 0 ? h('p', { class: 'muted' }, 'No experiments yet.') : null,
      h(
        'ul',
        { class: 'experiments' },
        (experiments ?? []).map((e) =>
          h('li', { key: e.id }, [
            h('span', { class: 'experiment-name' }, e.name),
            h(
              'ul',
              { class: 'datasets' },
              e.datasets.map((d) => {
                const sys = systemIdOf(d.name);
                return h('li', { key: d.id }, [
                  h(
                    'a',
                    {
                      href: `?experiment=${e.id}&dataset=${d.id}`,
                      'aria-current': d.id === location.datasetId ? 'true' : undefined,
                      onClick: (ev: Event) => {
                        ev.preventDefault();
                        navigate({ view: 'data', experimentId: e.id, datasetId: d.id, channels: [] });
                      },
                    },
                    d.name,
                  ),
                  h('span', { class: 'muted' }, ` ${d.storageShape === 'narrow' ? `MAVLink${sys !== undefined ? `, system ${sys}` : ''}` : 'wide'}`),
                ]);
              }),
            ),
          ]),
        ),
      ),
    ]),
    dataset && location.experimentId
      ? h(DatasetView, { key: dataset.id, api, session, experimentId: location.experimentId, datasetId: dataset.id, datasetName: dataset.name, narrow: dataset.storageShape === 'narrow', location, navigate })
      : h('section', { class: 'empty' }, h('p', { class: 'muted' }, experiments ? 'Choose a dataset to browse its channels.' : '')),
  ]);
}

interface DatasetProps {
  api: ConsoleApi;
  session: ConsoleSession;
  experimentId: string;
  datasetId: string;
  datasetName: string;
  narrow: boolean;
  location: ConsoleLocation;
  navigate: (next: ConsoleLocation, replace?: boolean) => void;
}

function DatasetView(props: DatasetProps): VNode<any> {
  const { api, session, experimentId, datasetId, location, navigate } = props;
  const [channels, setChannels] = useState<Channel[] | undefined>();
  const [events, setEvents] = useState<TimelineEvent[]>([]);
  const [commands, setCommands] = useState<CommandRecord[]>([]);
  const [filter, setFilter] = useState('');
  const [error, setError] = useState('');
  const [cursor, setCursor] = useState<number | undefined>();
  const [span, setSpan] = useState<PlotWindow | undefined>();
  const [axis, setAxis] = useState<PlotAxis | undefined>();
  const [exporting, setExporting] = useState('');

  useEffect(() => {
    api.channels(experimentId, datasetId).then(setChannels, (e: unknown) => setError(String(e instanceof Error ? e.message : e)));
    api.events(experimentId, datasetId).then(setEvents, () => setEvents([]));
  }, [api, experimentId, datasetId]);

  // The dataset's time span, before anything is plotted: one channel's first and last samples (the
  // downsampling keeps both), HEARTBEAT on a MAVLink flight since every vehicle sends it throughout.
  useEffect(() => {
    if (!channels || session.scopes.indexOf('telemetry:read') < 0) return;
    const probe = channels.find((c) => c.hypertableColName === 'mavlink.HEARTBEAT.type') ?? channels.find(plottable);
    if (!probe) return;
    let current = true;
    api.query({ experimentId, datasetId, channelIds: [queryChannelId(probe)], maxPointsPerChannel: 4 }).then(
      ({ series }) => {
        const times = series[0]?.times;
        if (current && times && times.length > 0) setSpan({ from: times[0]!, to: times[times.length - 1]! });
      },
      () => undefined,
    );
    return () => {
      current = false;
    };
  }, [channels]);

  const selected = useMemo(() => {
    const byName = new Map((channels ?? []).map((c) => [c.hypertableColName, c]));
    return location.channels.map((n) => byName.get(n)).filter((c): c is Channel => c !== undefined && plottable(c));
  }, [channels, location.channels]);
  const groups = useMemo(() => groupChannels(channels ?? [], filter), [channels, filter]);
  const marks = useMemo(() => marksOf(events, commands), [events, commands]);
  const window: PlotWindow | undefined = location.from !== undefined && location.to !== undefined ? { from: location.from, to: location.to } : undefined;

  const toggle = (name: string, on: boolean) => {
    const next = on ? [...location.channels.filter((c) => c !== name), name] : location.channels.filter((c) => c !== name);
    navigate({ ...location, channels: next });
  };
  const setWindow = (w: PlotWindow | undefined) => navigate({ ...location, from: w?.from, to: w?.to });

  const telemetryNeed = need(session.scopes, 'telemetry:read');
  const exportCsv = async () => {
    setExporting('Exporting…');
    try {
      const blob = await api.exportCsv({ experimentId, datasetId, channels: selected.map((c) => c.hypertableColName), window });
      const url = URL.createObjectURL(blob);
      const a = document.createElement('a');
      a.href = url;
      a.download = `${props.datasetName}.csv`;
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
      setExporting(`Exported ${blob.size.toLocaleString('en')} bytes`);
    } catch (e) {
      setExporting(`Export failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  };

  return h('div', { class: 'dataset' }, [
    h('section', { class: 'channels', 'aria-label': 'Channels' }, [
      h('h2', null, props.datasetName),
      span ? h('p', { class: 'muted', 'data-testid': 'dataset-span' }, `${formatIso(new Date(span.from * 1000).toISOString())} → ${formatIso(new Date(span.to * 1000).toISOString())}`) : null,
      h('label', { for: 'channel-filter' }, 'Filter channels'),
      h('input', { id: 'channel-filter', type: 'search', value: filter, placeholder: props.narrow ? 'e.g. attitude roll' : 'name, unit or type', onInput: (e: Event) => setFilter((e.target as HTMLInputElement).value) }),
      error ? h('p', { class: 'error', role: 'alert' }, error) : null,
      channels === undefined && !error ? h('p', { class: 'muted' }, 'Loading channels…') : null,
      h(
        'div',
        { class: 'channel-groups' },
        groups.map((g) =>
          h('details', { key: g.message, open: groups.length <= 3 || filter.length > 0 || g.channels.some((c) => location.channels.includes(c.hypertableColName)) }, [
            h('summary', null, `${g.message || 'Channels'} (${g.channels.length})`),
            h(
              'ul',
              null,
              g.channels.map((c) =>
                h('li', { key: c.id }, [
                  h('label', null, [
                    h('input', {
                      type: 'checkbox',
                      'data-channel': c.hypertableColName,
                      checked: location.channels.includes(c.hypertableColName),
                      disabled: telemetryNeed.disabled || !plottable(c),
                      onChange: (e: Event) => toggle(c.hypertableColName, (e.target as HTMLInputElement).checked),
                    }),
                    ` ${g.message ? c.name.slice(`mavlink.${g.message}.`.length) : c.name}`,
                  ]),
                  h('span', { class: 'muted' }, ` ${c.unit || '—'} · ${c.dataType}${plottable(c) ? '' : ' (exported, not plotted)'}`),
                ]),
              ),
            ),
          ]),
        ),
      ),
      telemetryNeed.note,
    ]),
    h('div', { class: 'workspace' }, [
      selected.length > 0
        ? h('div', { class: 'export' }, [
            h('button', { type: 'button', onClick: exportCsv, disabled: telemetryNeed.disabled }, 'Export CSV of the plotted channels (visible window)'),
            telemetryNeed.note,
            exporting ? h('span', { role: 'status', class: 'muted' }, ` ${exporting}`) : null,
          ])
        : h('p', { class: 'muted' }, 'Tick channels to plot them; drag across a plot to zoom.'),
      selected.length > 0
        ? h(Plot, { api, experimentId, datasetId, channels: selected, window, onWindow: setWindow, marks, onCursor: setCursor, onSpan: (s: PlotWindow) => setSpan((known) => known ?? s), onAxis: setAxis })
        : null,
      props.narrow ? h(FlightView, { api, experimentId, datasetId, window, cursor, axis: selected.length > 0 ? axis : undefined }) : null,
      h(CommandsPanel, { api, session, experimentId, datasetId, onCommands: setCommands }),
    ]),
  ]);
}
