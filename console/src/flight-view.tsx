import type { VNode } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import type { ConsoleApi, QuerySeries } from './api.ts';
import { indexAtOrBefore, localTrack, offsetText, scaleBarMetres } from './geo.ts';
import { joinTail, valuesAt, type LiveSeries } from './live.ts';
import { sourceSignals, sourceSpans, type FlightSources } from './log-flight.ts';
import { ModeBand } from './mode-band.tsx';
import type { PlotAxis, PlotWindow } from './plot.tsx';

// Enough for a long flight's track to arrive whole; a path is drawn, not pixels per point.
const MAX_POINTS = 20_000;
// The band's signals (HEARTBEAT fields, a log's mode and arming messages) are joined sample by sample,
// which needs every one of them, not a downsampled few: Query's most per channel, 14 hours of an
// autopilot and a companion at 1 Hz each.
const MAX_HEARTBEATS = 100_000;
const SIZE = 320;
const NONE = { times: [], values: [] };

interface Props {
  api: ConsoleApi;
  experimentId: string;
  datasetId: string;
  /** Which signals give the track and the band (log-flight.ts): GLOBAL_POSITION_INT and HEARTBEAT, or a log's own. */
  sources: FlightSources;
  /** Those of the sources' signals the dataset has stored (Query and Follow answer not_found for a signal never stored). */
  channelIds: string[];
  window: PlotWindow | undefined;
  cursor: number | undefined;
  /** The plots' time axis when plots are shown: the band is drawn on it, under them. */
  axis: PlotAxis | undefined;
  /** While following live: the stream's samples of the sources' signals, continuing what was read when following began. */
  live?: { series: ReadonlyMap<string, LiveSeries>; frame: number };
}

/** GPS track in local metres with a marker at the plot cursor, and the flight mode / armed band (HEARTBEAT, or the log's own mode). */
export function FlightView(props: Props): VNode<any> {
  const [read, setRead] = useState<Map<string, QuerySeries> | undefined>();
  const [error, setError] = useState('');
  const following = props.live !== undefined;
  const channelKey = props.channelIds.join('\n');
  // By content: a log's sources are made again when its metadata arrives, mostly with the same signals.
  const sourcesKey = JSON.stringify(props.sources);
  const signals = useMemo(() => sourceSignals(props.sources), [sourcesKey]);
  const all = useMemo(() => [...signals.track, ...signals.modes], [signals]);

  // The flight so far, read again when following starts or stops: live, the stream continues it.
  useEffect(() => {
    let current = true;
    const read = (channelIds: string[], maxPointsPerChannel: number) =>
      channelIds.length === 0
        ? Promise.resolve([])
        : props.api
            .query({ experimentId: props.experimentId, datasetId: props.datasetId, channelIds, maxPointsPerChannel })
            .then(({ series }) => series.map((s, i) => [channelIds[i]!, s] as const));
    const stored = (ids: string[]) => ids.filter((id) => props.channelIds.includes(id));
    Promise.all([read(stored(signals.track), MAX_POINTS), read(stored(signals.modes), MAX_HEARTBEATS)])
      .then(([track, modes]) => current && setRead(new Map([...track, ...modes])))
      .catch((e: unknown) => current && setError(e instanceof Error ? e.message : String(e)));
    return () => {
      current = false;
    };
  }, [props.api, props.experimentId, props.datasetId, following, channelKey, all.join('\n')]);

  // Joined again only when a flight channel gained samples, not on every frame of the plots.
  const grown = all
    .map((id) => {
      const s = props.live?.series.get(id);
      return s ? `${s.times.length}:${s.times[s.times.length - 1]}` : '';
    })
    .join();
  const series = useMemo(
    () => read && new Map(all.map((id) => [id, joinTail(read.get(id) ?? NONE, props.live?.series.get(id))])),
    [read, props.live?.series, grown],
  );
  // Rebuilt when a fix or a mode sample was added, not on every frame.
  const source = props.sources.track;
  const lat = source && series?.get(source.lat);
  const lon = source && series?.get(source.lon);
  const track = useMemo(
    () => source && lat && lon && localTrack(lat.times, lat.values, valuesAt(lat.times, lon.times, lon.values), source.unitsPerDegree),
    [lat?.times.length, lat?.times[lat.times.length - 1], read],
  );
  const first = signals.modes[0] === undefined ? undefined : series?.get(signals.modes[0]);
  const { spans, range } = useMemo(() => {
    if (!series || !props.sources.modes) return { spans: [], range: undefined };
    let start = Infinity;
    let end = 0;
    for (const s of series.values()) {
      if (s.times.length === 0) continue;
      start = Math.min(start, s.times[0]!);
      end = Math.max(end, s.times[s.times.length - 1]!);
    }
    return {
      spans: sourceSpans(props.sources.modes, (id) => series.get(id), end),
      range: start < end ? { from: start, to: end } : undefined,
    };
  }, [first?.times.length, first?.times[first.times.length - 1], read, sourcesKey]);

  const geometry = useMemo(() => {
    if (!track || track.x.length === 0) return undefined;
    let minX = Infinity,
      maxX = -Infinity,
      minY = Infinity,
      maxY = -Infinity;
    for (let i = 0; i < track.x.length; i++) {
      minX = Math.min(minX, track.x[i]!);
      maxX = Math.max(maxX, track.x[i]!);
      minY = Math.min(minY, track.y[i]!);
      maxY = Math.max(maxY, track.y[i]!);
    }
    // One scale for both axes so the track's shape is true; 10 % margin.
    const extent = Math.max(maxX - minX, maxY - minY, 1) * 1.1;
    const cx = (minX + maxX) / 2;
    const cy = (minY + maxY) / 2;
    const px = (x: number) => ((x - cx) / extent + 0.5) * SIZE;
    const py = (y: number) => (0.5 - (y - cy) / extent) * SIZE;
    let d = '';
    for (let i = 0; i < track.x.length; i++) d += `${i === 0 ? 'M' : 'L'}${px(track.x[i]!).toFixed(1)} ${py(track.y[i]!).toFixed(1)}`;
    return { d, px, py, extent };
  }, [track]);

  // At the plots' cursor; live without one, at the latest fix (where the vehicle is now).
  const marker = useMemo(() => {
    if (!track || !geometry || (props.cursor === undefined && !following)) return undefined;
    const i = props.cursor === undefined ? track.times.length - 1 : indexAtOrBefore(track.times, props.cursor);
    if (i < 0) return undefined;
    return { x: geometry.px(track.x[i]!), y: geometry.py(track.y[i]!), east: track.x[i]!, north: track.y[i]! };
  }, [track, geometry, props.cursor, following]);

  // On the plots' axis when there are plots (the same pixels for the same instant), else across the width.
  const band = props.axis ? { from: props.axis.min, to: props.axis.max } : (props.window ?? range);
  return (
    <section class="flight" aria-label="Flight">
      <h3>Flight</h3>
      {error ? <p class="error" role="alert">{`Flight data unavailable: ${error}`}</p> : null}
      {read && !source ? (
        <p class="muted" data-testid="no-position">
          No position in this log (no global position or GPS message).
        </p>
      ) : null}
      {source && track && track.x.length === 0 ? <p class="muted" data-testid="no-position">{`No GPS fix in ${source.label}.`}</p> : null}
      {band && band.to > band.from && spans.length > 0 ? <ModeBand spans={spans} range={band} axis={props.axis} end={range?.to} /> : null}
      {geometry ? (
        <figure class="track">
          <svg
            viewBox={`0 0 ${SIZE} ${SIZE}`}
            width={SIZE}
            height={SIZE}
            role="img"
            aria-label={`GPS track from ${source!.label}, ${track!.x.length} fixes, ${Math.round(geometry.extent / 1.1)} m across`}
            data-fixes={track!.x.length}
            data-source={source!.label}
          >
            <rect x={0} y={0} width={SIZE} height={SIZE} class="track-bg" />
            <path d={geometry.d} class="track-path" />
            {scaleBar(geometry.extent)}
            <text x={SIZE - 10} y={18} class="track-north" text-anchor="end">
              N ↑
            </text>
            {marker ? <circle cx={marker.x} cy={marker.y} r={6} class="track-marker" data-testid="track-marker" /> : null}
          </svg>
          <figcaption class="muted">
            {marker
              ? `${props.cursor === undefined ? 'Latest fix' : 'At cursor'}: ${offsetText(marker.east, marker.north)} of the first fix`
              : 'Local metres from the first fix; hover the plots to follow the vehicle.'}
          </figcaption>
        </figure>
      ) : null}
    </section>
  );
}

/** A round-length bar at the bottom left of the track, at most a quarter of the square's width. */
function scaleBar(extent: number) {
  const metres = scaleBarMetres(extent / 4);
  const width = (metres / extent) * SIZE;
  const y = SIZE - 14;
  return [
    <path d={`M10 ${y - 4}V${y}H${(10 + width).toFixed(1)}V${y - 4}`} class="track-scale" />,
    <text x={10} y={y - 7} class="track-scale-label" data-testid="track-scale">{`${metres >= 1000 ? `${metres / 1000} km` : `${metres} m`}`}</text>,
  ];
}
