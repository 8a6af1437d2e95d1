import type { Channel, CommandRecord, ConsoleSession, CreateImportResponse, Experiment, LogImport, TimelineEvent } from '@sortie/contracts';
import type { VNode } from 'preact';
import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { ConsoleApi } from './api.ts';
import { CommandsPanel } from './commands-panel.tsx';
import { DatasetFacts, useSummaries } from './dataset-facts.tsx';
import { FlightView } from './flight-view.tsx';
import { liveTimings, useFollow, type Follow } from './follow.ts';
import { formatIso, formatUtc, timestampSeconds } from './format.ts';
import { ImportButton, ImportRows, useImports } from './imports-view.tsx';
import { LimitBanner } from './limit-banner.tsx';
import { isLive, limitsOf, LIVE_WINDOW_SECONDS, mergeEvents, worsened } from './live.ts';
import { datasetKindLabel, flightSources, isLogDataset, logFacts, sourceSignals, type DatasetKind, type LogFact } from './log-flight.ts';
import { marksOf } from './marks.ts';
import { NewExperiment } from './new-experiment.tsx';
import { ParametersView, type FlightChoice } from './parameters-view.tsx';
import { Plot, type PlotAxis, type PlotWindow } from './plot.tsx';
import { need, type Need } from './scopes.tsx';
import { fieldOf, groupChannels, plottable, queryChannelId, systemIdOf } from './signals.ts';
import type { ConsoleLocation } from './url-state.ts';
import { checkedOf, onValue } from './actions.ts';
import { ErrorAlert } from './error-alert.tsx';

// The list is read again at this period while shown, so a flight that starts or stops streaming is
// marked (or no longer marked) live within seconds.
const LIST_REFRESH_MS = 5000;

interface Props {
  api: ConsoleApi;
  session: ConsoleSession;
  location: ConsoleLocation;
  navigate: (next: ConsoleLocation, replace?: boolean) => void;
}

export function DataView(props: Props): VNode<any> {
  const { api, session, location, navigate } = props;
  const [experiments, setExperiments] = useState<Experiment[] | undefined>();
  // The service's clock less the browser's (api.experimentsAt): `lastDataAt` is read on the service's.
  const [skew, setSkew] = useState(0);
  const [error, setError] = useState('');
  const canRead = session.scopes.includes('datasets:read');
  // Flights imported from this page: finished files, never live, though their data was just written.
  const [imported, setImported] = useState<ReadonlySet<string>>(new Set());
  // The experiment a file is being dragged over.
  const [dropTarget, setDropTarget] = useState<string | undefined>();

  const read = useCallback(
    () =>
      api.experimentsAt().then(
        (answer) => {
          setExperiments(answer.experiments);
          setSkew(answer.serverSkewMs);
          setError('');
        },
        (e: unknown) => setError(String(e instanceof Error ? e.message : e)),
      ),
    [api],
  );
  useEffect(() => {
    if (!canRead) return;
    void read();
    const timer = setInterval(() => document.visibilityState === 'visible' && void read(), LIST_REFRESH_MS);
    return () => clearInterval(timer);
  }, [read]);
  const serverNow = Date.now() + skew;

  const summaries = useSummaries(api, experiments, imported);
  const imports = useImports(api, (answer: CreateImportResponse) => {
    setImported((held) => new Set(held).add(answer.datasetId));
    void read();
  });
  const importNeed = need(session.scopes, 'telemetry:write');
  // A file dropped beside an experiment would otherwise be opened by the browser in place of the console.
  useEffect(() => {
    const refuse = (e: DragEvent) => {
      if (e.dataTransfer?.types.includes('Files')) e.preventDefault();
    };
    window.addEventListener('dragover', refuse);
    window.addEventListener('drop', refuse);
    return () => {
      window.removeEventListener('dragover', refuse);
      window.removeEventListener('drop', refuse);
    };
  }, []);
  const dropHandlers = (e: Experiment) => ({
    onDragOver: (ev: DragEvent) => {
      if (!ev.dataTransfer?.types.includes('Files') || importNeed.disabled) return;
      ev.preventDefault();
      ev.dataTransfer.dropEffect = 'copy';
      setDropTarget(e.id);
    },
    onDragLeave: (ev: DragEvent) => {
      // Leaving for one of its own children is not leaving.
      if (!(ev.currentTarget as Node).contains(ev.relatedTarget as Node | null)) setDropTarget(undefined);
    },
    onDrop: (ev: DragEvent) => {
      setDropTarget(undefined);
      if (!ev.dataTransfer?.files.length || importNeed.disabled) return;
      ev.preventDefault();
      imports.add(e.id, ev.dataTransfer.files);
    },
  });
  const nameOf = (datasetId: string) => {
    for (const e of experiments ?? []) for (const d of e.datasets) if (d.id === datasetId) return d.name;
    return undefined;
  };
  const openFlight = (answer: CreateImportResponse) => navigate({ view: 'data', experimentId: answer.experimentId, datasetId: answer.datasetId, channels: [] });
  const live = (d: Experiment['datasets'][number]) => isLive(d.lastDataAt, serverNow) && !isLogDataset(d) && !imported.has(d.id);
  // Every narrow flight, for the parameters' "Compare with…".
  const flights = useMemo<FlightChoice[]>(
    () =>
      (experiments ?? []).flatMap((e) =>
        e.datasets.filter((d) => d.storageShape === 'narrow').map((d) => ({ id: d.id, name: d.name, experimentName: e.name })),
      ),
    [experiments],
  );

  const dataset = useMemo(() => {
    for (const e of experiments ?? []) for (const d of e.datasets) if (d.id === location.datasetId) return d;
    return undefined;
  }, [experiments, location.datasetId]);

  const readNeed = need(session.scopes, 'datasets:read');
  return (
    <div class="data-view">
      <aside class="browser" aria-label="Experiments and datasets">
        <h2>Experiments</h2>
        {readNeed.note}
        <NewExperiment
          api={api}
          session={session}
          onCreated={(created) => setExperiments((held) => [created, ...(held ?? []).filter((e) => e.id !== created.id)])}
        />
        <ErrorAlert error={error} />
        {experiments === undefined && canRead ? <p class="muted">Loading…</p> : null}
        {experiments?.length === 0 ? <p class="muted">No experiments yet.</p> : null}
        <ul class="experiments">
          {(experiments ?? []).map((e) => (
            <li key={e.id} class={`experiment${dropTarget === e.id ? ' drop-target' : ''}`} data-experiment={e.id} {...dropHandlers(e)}>
              <span class="experiment-name">{e.name}</span>
              {dropTarget === e.id ? <p class="drop-hint" aria-hidden="true">{`Drop to import into ${e.name}`}</p> : null}
              <ul class="datasets">
                {e.datasets.map((d) => {
                  const sys = systemIdOf(d.name);
                  const streaming = live(d);
                  return (
                    <li key={d.id} data-live={String(streaming)} data-dataset={d.id}>
                      <a
                        href={`?experiment=${e.id}&dataset=${d.id}`}
                        aria-current={d.id === location.datasetId ? 'true' : undefined}
                        onClick={(ev: Event) => {
                          ev.preventDefault();
                          navigate({ view: 'data', experimentId: e.id, datasetId: d.id, channels: [] });
                        }}
                      >
                        {d.name}
                      </a>
                      <span class="muted">{` ${datasetKindLabel(d, sys)}`}</span>
                      {streaming ? (
                        <span class="live-badge" title={`data received ${formatIso(d.lastDataAt)}`}>
                          live
                        </span>
                      ) : null}
                      <DatasetFacts summary={summaries.get(d.id)} log={isLogDataset(d)} />
                    </li>
                  );
                })}
              </ul>
              <ImportButton experimentId={e.id} experimentName={e.name} need={importNeed} onFiles={(files: File[]) => imports.add(e.id, files)} />
              <ImportRows
                rows={imports.rows.filter((r) => r.experimentId === e.id)}
                flightHref={(a: CreateImportResponse) => `?experiment=${a.experimentId}&dataset=${a.datasetId}`}
                open={openFlight}
                nameOf={nameOf}
                cancel={imports.cancel}
                dismiss={imports.dismiss}
              />
            </li>
          ))}
        </ul>
      </aside>
      {dataset && location.experimentId ? (
        <DatasetView
          key={dataset.id}
          api={api}
          session={session}
          experimentId={location.experimentId}
          datasetId={dataset.id}
          datasetName={dataset.name}
          narrow={dataset.storageShape === 'narrow'}
          kind={dataset}
          flights={flights.filter((f) => f.id !== dataset.id)}
          live={live(dataset)}
          location={location}
          navigate={navigate}
        />
      ) : (
        <section class="empty">
          <p class="muted">
            {experiments ? "Choose a dataset to browse its channels, or drop a vehicle's log (.ulg, .BIN, .tlog) on an experiment to import it." : ''}
          </p>
        </section>
      )}
    </div>
  );
}

interface DatasetProps {
  api: ConsoleApi;
  session: ConsoleSession;
  experimentId: string;
  datasetId: string;
  datasetName: string;
  narrow: boolean;
  /** Its codec and format: a MAVLink flight, or a vehicle's own log (log-flight.ts). */
  kind: DatasetKind;
  /** Other flights, for comparing parameters. */
  flights: FlightChoice[];
  /** Whether the list marks the dataset live (its telemetry arrived seconds ago). */
  live: boolean;
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
  // The import that made this flight, if one did: the log's description of the vehicle.
  const [logImport, setLogImport] = useState<LogImport | undefined>();
  // Once live, the view stays a live view until it is left: a link that drops for a while (LINK_LOSS)
  // must not turn the plots into the whole-flight view under the conductor's eyes.
  const [datasetLive, setDatasetLive] = useState(props.live);
  useEffect(() => {
    if (props.live) setDatasetLive(true);
  }, [props.live]);
  const canTelemetry = session.scopes.includes('telemetry:read');
  const window: PlotWindow | undefined = location.from !== undefined && location.to !== undefined ? { from: location.from, to: location.to } : undefined;
  // Live mode: a live dataset with no window chosen. Zooming or pausing sets a window, which leaves it.
  const liveMode = datasetLive && window === undefined && canTelemetry;

  const readChannels = () => api.channels(experimentId, datasetId).then(setChannels, (e: unknown) => setError(String(e instanceof Error ? e.message : e)));
  useEffect(() => {
    void readChannels();
    api.events(experimentId, datasetId).then(
      (list) => setEvents((held) => mergeEvents(list, held)),
      () => undefined,
    );
  }, [api, experimentId, datasetId]);

  useEffect(() => {
    if (!props.narrow) return;
    let current = true;
    api.imports({ datasetId }).then(
      (list) => current && setLogImport(list[0]),
      () => undefined,
    );
    return () => {
      current = false;
    };
  }, [api, datasetId, props.narrow]);

  const names = useMemo(() => new Set((channels ?? []).map((c) => c.hypertableColName)), [channels]);
  // Which signals draw the track and the band: HEARTBEAT and GLOBAL_POSITION_INT, or a log's own.
  const sources = useMemo(() => flightSources(props.kind, channels ?? [], logImport?.metadata), [channels, logImport, props.kind.codec, props.kind.format]);
  const flightSignals = useMemo(() => {
    const { track, modes } = sourceSignals(sources);
    return [...track, ...modes];
  }, [sources]);
  // The flight view reads what the dataset has stored: a signal never stored is not_found to Query and Follow.
  const flightIds = useMemo(() => (props.narrow ? flightSignals.filter((id) => names.has(id)) : []), [names, props.narrow, flightSignals]);
  // A flight that just began may not have sent a position or a heartbeat yet: look again until it has.
  const flightMissing = props.narrow && liveMode && channels !== undefined && flightIds.length < flightSignals.length;
  useEffect(() => {
    if (!flightMissing) return;
    const timer = setInterval(() => void readChannels(), LIST_REFRESH_MS);
    return () => clearInterval(timer);
  }, [flightMissing]);

  // The dataset's time span, before anything is plotted: its first and last sample as stored, over every
  // channel (GET /api/datasets/span). One channel's would not do: a MAVLink flight's HEARTBEAT starts after
  // its first ATTITUDE and a PX4 stream's may cover a fraction of its plots. Read again as channels appear.
  useEffect(() => {
    if (!channels) return;
    let current = true;
    api.span(experimentId, datasetId).then(
      ({ first, last }) => {
        if (current && first && last) setSpan({ from: timestampSeconds(first), to: timestampSeconds(last) });
      },
      () => undefined,
    );
    return () => {
      current = false;
    };
  }, [channels, liveMode]);

  const selected = useMemo(() => {
    const byName = new Map((channels ?? []).map((c) => [c.hypertableColName, c]));
    return location.channels.map((n) => byName.get(n)).filter((c): c is Channel => c !== undefined && plottable(c));
  }, [channels, location.channels]);

  // One stream for the open dataset: live, the plotted channels and the flight view's (Follow takes any
  // signal of the dialect, stored yet or not, so the track starts with the first fix); otherwise none,
  // for the events and command changes alone (the command log is kept current by it either way).
  const flightFollowed = props.narrow ? flightSignals : [];
  const followIds = liveMode ? [...new Set([...selected.map(queryChannelId), ...flightFollowed])] : [];
  const follow = useFollow(api, {
    experimentId,
    datasetId,
    channelIds: followIds,
    keepAll: flightFollowed,
    windowSeconds: LIVE_WINDOW_SECONDS,
    // One point per pixel of the plot area across the window, as Query asks (see plot.ts plotWidth).
    budget: Math.max(100, (document.querySelector('.workspace')?.clientWidth ?? 1000) - 120),
    enabled: canTelemetry,
  });
  const store = follow?.store;
  useEffect(() => {
    if (store && store.events.size > 0) setEvents((held) => mergeEvents(held, store.events.values()));
  }, [store, store?.eventsSeen]);
  // Every view has committed this frame's update (uPlot drew in its setData): the live timings' second instant.
  useLayoutEffect(() => liveTimings.drawn(), [follow?.frame]);

  const head = liveMode ? store?.head : undefined;
  const liveWindow = head !== undefined ? { from: head - LIVE_WINDOW_SECONDS, to: head } : undefined;
  const live = liveMode && store ? { series: store.series, frame: follow!.frame } : undefined;

  const groups = useMemo(() => groupChannels(channels ?? [], filter), [channels, filter]);
  // A command's relTime counts from the dataset's first sample: its span's start.
  const firstSample = span?.from;
  const marks = useMemo(() => marksOf(events, commands, firstSample), [events, commands, firstSample]);
  // Named as the channel list names them: a rule on a wide dataset names its channel by index.
  const limits = useMemo(() => {
    const byId = new Map((channels ?? []).map((c) => [queryChannelId(c), c]));
    return limitsOf(events).map((l) => {
      const c = byId.get(l.signal);
      return c ? { ...l, label: c.name, unit: c.unit } : l;
    });
  }, [events, channels]);

  const toggle = (name: string, on: boolean) => {
    const next = on ? [...location.channels.filter((c) => c !== name), name] : location.channels.filter((c) => c !== name);
    navigate({ ...location, channels: next });
  };
  const setWindow = (w: PlotWindow | undefined) => navigate({ ...location, from: w?.from, to: w?.to });

  const telemetryNeed = need(session.scopes, 'telemetry:read');
  const exportCsv = async () => {
    setExporting('Exporting…');
    try {
      const blob = await api.exportCsv({ experimentId, datasetId, channels: selected.map((c) => c.hypertableColName), window: window ?? liveWindow });
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

  // Telemetry or parameters (a narrow flight's), in the page's address so a link can open either.
  const panel = props.narrow ? location.panel : undefined;
  const showPanel = (next: ConsoleLocation['panel']) => navigate({ ...location, panel: next }, true);
  // Read when first shown, then kept (hidden) while the telemetry is: a comparison chosen survives a look at the plots.
  const parametersShown = useRef(false);
  if (panel === 'parameters') parametersShown.current = true;
  const facts = useMemo(
    () => (logImport ? [...logFacts(logImport.metadata), ...(logImport.fileName ? [{ label: 'Imported from', value: logImport.fileName }] : [])] : []),
    [logImport],
  );
  // Memoized as one component vnode: a live frame re-renders this view, and a MAVLink flight's hundreds
  // of channel rows need not be compared again each time.
  const channelList = useMemo(
    () => (
      <ChannelList
        name={props.datasetName}
        narrow={props.narrow}
        span={span}
        live={datasetLive}
        facts={facts}
        tabs={props.narrow ? <PanelTabs panel={panel} onPanel={showPanel} /> : null}
        channels={channels}
        groups={groups}
        filter={filter}
        setFilter={setFilter}
        error={error}
        location={location}
        toggle={toggle}
        telemetryNeed={telemetryNeed}
      />
    ),
    [span, datasetLive, facts, channels, groups, filter, error, location],
  );
  return (
    <div class="dataset">
      {channelList}
      <div class="workspace">
        {parametersShown.current ? (
          <div role="tabpanel" id="panel-parameters" aria-labelledby="tab-parameters" hidden={panel !== 'parameters'}>
            <ParametersView api={api} experimentId={experimentId} datasetId={datasetId} datasetName={props.datasetName} flights={props.flights} />
          </div>
        ) : null}
        <div
          role={props.narrow ? 'tabpanel' : undefined}
          id="panel-telemetry"
          aria-labelledby={props.narrow ? 'tab-telemetry' : undefined}
          hidden={panel === 'parameters'}
        >
          <LimitBanner limits={store ? limits.map((l) => worsened(l, store.series.get(l.signal))) : limits} />
          {datasetLive && canTelemetry ? (
            <LiveBar
              follow={follow}
              liveMode={liveMode}
              head={head}
              channels={followIds.length}
              onPause={() => liveWindow && setWindow(liveWindow)}
              onResume={() => setWindow(undefined)}
            />
          ) : null}
          {selected.length > 0 ? (
            <div class="export">
              <button type="button" onClick={exportCsv} disabled={telemetryNeed.disabled}>
                {liveMode ? 'Export CSV of the plotted channels (live window)' : 'Export CSV of the plotted channels (visible window)'}
              </button>
              {telemetryNeed.note}
              {exporting ? <span role="status" class="muted">{` ${exporting}`}</span> : null}
            </div>
          ) : (
            <p class="muted">Tick channels to plot them; drag across a plot to zoom.</p>
          )}
          {selected.length > 0 ? (
            <Plot
              api={api}
              experimentId={experimentId}
              datasetId={datasetId}
              channels={selected}
              window={liveMode ? liveWindow : window}
              onWindow={setWindow}
              marks={marks}
              limits={limits}
              limitsNow={head}
              live={live}
              liveDataset={datasetLive}
              onCursor={setCursor}
              onSpan={(s: PlotWindow) => setSpan((known) => known ?? s)}
              onAxis={setAxis}
            />
          ) : null}
          {props.narrow ? (
            <FlightView
              api={api}
              experimentId={experimentId}
              datasetId={datasetId}
              sources={sources}
              channelIds={flightIds}
              window={liveMode ? liveWindow : window}
              cursor={cursor}
              axis={selected.length > 0 ? axis : undefined}
              live={live}
            />
          ) : null}
          {isLogDataset(props.kind) ? null : (
            <CommandsPanel
              api={api}
              session={session}
              experimentId={experimentId}
              datasetId={datasetId}
              origin={firstSample}
              onCommands={setCommands}
              live={store && { commands: store.commands, seen: store.commandsSeen }}
              followed={follow?.status === 'following'}
            />
          )}
        </div>
      </div>
    </div>
  );
}

const PANELS = [
  { panel: undefined, id: 'telemetry', label: 'Telemetry' },
  { panel: 'parameters', id: 'parameters', label: 'Parameters' },
] as const;

/** Telemetry or parameters: a tab list (arrow keys move between the tabs, as the ARIA pattern has it). */
function PanelTabs(props: { panel: ConsoleLocation['panel']; onPanel: (panel: ConsoleLocation['panel']) => void }): VNode<any> {
  const onKeyDown = (e: KeyboardEvent) => {
    if (e.key !== 'ArrowLeft' && e.key !== 'ArrowRight') return;
    e.preventDefault();
    const next = PANELS.find((p) => p.panel !== props.panel)!;
    props.onPanel(next.panel);
    document.getElementById(`tab-${next.id}`)?.focus();
  };
  return (
    <div role="tablist" aria-label="The flight's views" class="panel-tabs" onKeyDown={onKeyDown}>
      {PANELS.map((p) => {
        const selected = p.panel === props.panel;
        return (
          <button
            type="button"
            role="tab"
            id={`tab-${p.id}`}
            aria-selected={selected ? 'true' : 'false'}
            aria-controls={`panel-${p.id}`}
            tabIndex={selected ? 0 : -1}
            onClick={() => props.onPanel(p.panel)}
          >
            {p.label}
          </button>
        );
      })}
    </div>
  );
}

/**
 * Following or not, and the one control that changes it: Pause (keeps the window shown, as a zoom
 * does) while live, Resume live otherwise. The state is text, not only colour.
 */
function LiveBar(props: {
  follow: Follow | undefined;
  liveMode: boolean;
  head: number | undefined;
  channels: number;
  onPause: () => void;
  onResume: () => void;
}): VNode<any> {
  const status = props.follow?.status;
  const state = !props.liveMode ? 'Paused' : status === 'following' ? 'Live' : status === 'failed' ? 'Not following' : 'Connecting…';
  const detail = !props.liveMode
    ? 'a window is shown; the flight goes on streaming'
    : status === 'reconnecting'
      ? 'reconnecting to the service…'
      : status === 'failed'
        ? props.follow?.error
        : props.head !== undefined
          ? `the last ${LIVE_WINDOW_SECONDS} s, newest sample ${formatUtc(props.head)} UTC`
          : props.channels === 0
            ? 'events and commands; tick channels to follow them'
            : 'waiting for the first samples';
  return (
    <div class={`live-bar ${props.liveMode ? 'is-live' : 'is-paused'}`} role="group" aria-label="Live following">
      <span class="live-state" data-testid="live-state" data-state={props.liveMode ? 'live' : 'paused'}>
        {state}
      </span>
      <span class="muted">{detail}</span>
      {props.liveMode ? (
        <button type="button" onClick={props.onPause} disabled={props.head === undefined}>
          Pause
        </button>
      ) : (
        <button type="button" class="resume-live" onClick={props.onResume}>
          Resume live
        </button>
      )}
    </div>
  );
}

interface ChannelListProps {
  name: string;
  narrow: boolean;
  span: PlotWindow | undefined;
  /** What an imported log says of the vehicle (system, hardware, software, firmware). */
  facts: LogFact[];
  /** The flight's views (telemetry, parameters), under its name. */
  tabs: VNode<any> | null;
  /** Streaming: the span's end is now, not what it was when the view opened. */
  live: boolean;
  channels: Channel[] | undefined;
  groups: ReturnType<typeof groupChannels>;
  filter: string;
  setFilter: (filter: string) => void;
  error: string;
  location: ConsoleLocation;
  toggle: (name: string, on: boolean) => void;
  telemetryNeed: Need;
}

function ChannelList(props: ChannelListProps): VNode<any> {
  const { channels, groups, filter, location, telemetryNeed } = props;
  return (
    <section class="channels" aria-label="Channels">
      <h2>{props.name}</h2>
      {props.span ? (
        <p
          class="muted"
          data-testid="dataset-span"
        >{`${formatIso(new Date(props.span.from * 1000).toISOString())} → ${props.live ? 'streaming' : formatIso(new Date(props.span.to * 1000).toISOString())}`}</p>
      ) : null}
      {props.facts.length > 0 ? (
        <dl class="log-facts" aria-label="The vehicle, as its log describes it">
          {props.facts.flatMap((f) => [
            <dt key={`t${f.label}`}>{f.label}</dt>,
            <dd key={`d${f.label}`} data-fact={f.label}>
              {f.value}
            </dd>,
          ])}
        </dl>
      ) : null}
      {props.tabs}
      <label for="channel-filter">Filter channels</label>
      <input
        id="channel-filter"
        type="search"
        value={filter}
        placeholder={props.narrow ? 'e.g. attitude roll' : 'name, unit or type'}
        onInput={onValue(props.setFilter)}
      />
      <ErrorAlert error={props.error} />
      {channels === undefined && !props.error ? <p class="muted">Loading channels…</p> : null}
      <div class="channel-groups">
        {groups.map((g) => (
          <details key={g.message} open={groups.length <= 3 || filter.length > 0 || g.channels.some((c) => location.channels.includes(c.hypertableColName))}>
            <summary>{`${g.message || 'Channels'} (${g.channels.length})`}</summary>
            <ul>
              {g.channels.map((c) => (
                <li key={c.id}>
                  <label>
                    <input
                      type="checkbox"
                      data-channel={c.hypertableColName}
                      checked={location.channels.includes(c.hypertableColName)}
                      disabled={telemetryNeed.disabled || !plottable(c)}
                      onChange={(e: Event) => props.toggle(c.hypertableColName, checkedOf(e))}
                    />
                    {` ${g.message ? fieldOf(c.name) : c.name}`}
                  </label>
                  <span class="muted">{` ${c.unit || '—'} · ${c.dataType}${plottable(c) ? '' : ' (exported, not plotted)'}`}</span>
                </li>
              ))}
            </ul>
          </details>
        ))}
      </div>
      {telemetryNeed.note}
    </section>
  );
}
