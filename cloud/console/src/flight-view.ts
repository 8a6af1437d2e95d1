import { h, type VNode } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import type { ConsoleApi, QuerySeries } from './api.ts';
import { indexAtOrBefore, localTrack, scaleBarMetres } from './geo.ts';
import { heartbeatSpans } from './heartbeat.ts';
import { joinTail, valuesAt, type LiveSeries } from './live.ts';
import { ModeBand } from './mode-band.ts';
import type { PlotAxis, PlotWindow } from './plot.ts';

const LAT = 'mavlink.GLOBAL_POSITION_INT.lat';
const LON = 'mavlink.GLOBAL_POSITION_INT.lon';
// Which component a HEARTBEAT is from and what it says: the band follows the vehicle's autopilot alone (heartbeat.ts).
const HB = ['mavlink.HEARTBEAT.type', 'mavlink.HEARTBEAT.autopilot', 'mavlink.HEARTBEAT.base_mode', 'mavlink.HEARTBEAT.custom_mode'];
/** What the flight view reads; a live view follows these whole (the track and band show the flight so far). */
export const FLIGHT_CHANNELS = [LAT, LON, ...HB];
// Enough for a long flight's track to arrive whole; a path is drawn, not pixels per point.
const MAX_POINTS = 20_000;
// HEARTBEATs are joined field by field, which needs every one of them, not a downsampled few: Query's
// most per channel, 14 hours of an autopilot and a companion at 1 Hz each.
const MAX_HEARTBEATS = 100_000;
const SIZE = 320;
const NONE = { times: [], values: [] };

interface Props {
  api: ConsoleApi;
  experimentId: string;
  datasetId: string;
  /** Those of FLIGHT_CHANNELS the dataset has stored (Query and Follow answer not_found for a signal never stored). */
  channelIds: string[];
  window: PlotWindow | undefined;
  cursor: number | undefined;
  /** The plots' time axis when plots are shown: the band is drawn on it, under them. */
  axis: PlotAxis | undefined;
  /** While following live: the stream's samples of FLIGHT_CHANNELS, continuing what was read when following began. */
  live?: { series: ReadonlyMap<string, LiveSeries>; frame: number };
}

/** GPS track in local metres with a marker at the plot cursor, and the flight mode / armed band from HEARTBEAT. */
export function FlightView(props: Props): VNode<any> {
  const [read, setRead] = useState<Map<string, QuerySeries> | undefined>();
  const [error, setError] = useState('');
  const following = props.live !== undefined;
  const channelKey = props.channelIds.join('\n');

  // The flight so far, read again when following starts or stops: live, the stream continues it.
  useEffect(() => {
    let current = true;
    const read = (channelIds: string[], maxPointsPerChannel: number) =>
      channelIds.length === 0
        ? Promise.resolve([])
        : props.api
            .query({ experimentId: props.experimentId, datasetId: props.datasetId, channelIds, maxPointsPerChannel })
            .then(({ series }) => series.map((s, i) => [channelIds[i]!, s] as const));
    const heartbeat = props.channelIds.filter((id) => HB.includes(id));
    Promise.all([read(props.channelIds.filter((id) => !HB.includes(id)), MAX_POINTS), read(heartbeat, MAX_HEARTBEATS)])
      .then(([track, hb]) => current && setRead(new Map([...track, ...hb])))
      .catch((e: unknown) => current && setError(e instanceof Error ? e.message : String(e)));
    return () => {
      current = false;
    };
  }, [props.api, props.experimentId, props.datasetId, following, channelKey]);

  // Joined again only when a flight channel gained samples, not on every frame of the plots.
  const grown = FLIGHT_CHANNELS.map((id) => {
    const s = props.live?.series.get(id);
    return s ? `${s.times.length}:${s.times[s.times.length - 1]}` : '';
  }).join();
  const series = useMemo(() => read && FLIGHT_CHANNELS.map((id) => joinTail(read.get(id) ?? NONE, props.live?.series.get(id))), [read, props.live?.series, grown]);
  // Rebuilt when a fix or a heartbeat was added, not on every frame.
  const [lat, lon, type, autopilot, base, custom] = series ?? [];
  const track = useMemo(
    () => lat && lon && localTrack(lat.times, lat.values, valuesAt(lat.times, lon.times, lon.values)),
    [lat?.times.length, lat?.times[lat.times.length - 1], read],
  );
  const { spans, range } = useMemo(() => {
    if (!series || !type || !autopilot || !base || !custom) return { spans: [], range: undefined };
    let start = Infinity;
    let end = 0;
    for (const s of series) {
      if (s.times.length === 0) continue;
      start = Math.min(start, s.times[0]!);
      end = Math.max(end, s.times[s.times.length - 1]!);
    }
    return {
      spans: heartbeatSpans(type, autopilot, base, custom, end),
      range: start < end ? { from: start, to: end } : undefined,
    };
  }, [type?.times.length, type?.times[type.times.length - 1], read]);

  const geometry = useMemo(() => {
    if (!track || track.x.length === 0) return undefined;
    let minX = Infinity, maxX = -Infinity, minY = Infinity, maxY = -Infinity;
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
  return h('section', { class: 'flight', 'aria-label': 'Flight' }, [
    h('h3', null, 'Flight'),
    error ? h('p', { class: 'error', role: 'alert' }, `Flight data unavailable: ${error}`) : null,
    track && track.x.length === 0 ? h('p', { class: 'muted' }, 'No GPS fix in GLOBAL_POSITION_INT.') : null,
    band && band.to > band.from && spans.length > 0 ? h(ModeBand, { spans, range: band, axis: props.axis, end: range?.to }) : null,
    geometry
      ? h('figure', { class: 'track' }, [
          h('svg', { viewBox: `0 0 ${SIZE} ${SIZE}`, width: SIZE, height: SIZE, role: 'img', 'aria-label': `GPS track, ${track!.x.length} fixes, ${Math.round(geometry.extent / 1.1)} m across`, 'data-fixes': track!.x.length }, [
            h('rect', { x: 0, y: 0, width: SIZE, height: SIZE, class: 'track-bg' }),
            h('path', { d: geometry.d, class: 'track-path' }),
            // A scale bar and north: without map tiles, they are what tells the track's size and heading.
            ...scaleBar(geometry.extent),
            h('text', { x: SIZE - 10, y: 18, class: 'track-north', 'text-anchor': 'end' }, 'N ↑'),
            marker ? h('circle', { cx: marker.x, cy: marker.y, r: 6, class: 'track-marker', 'data-testid': 'track-marker' }) : null,
          ]),
          h(
            'figcaption',
            { class: 'muted' },
            marker
              ? `${props.cursor === undefined ? 'Latest fix' : 'At cursor'}: ${marker.east.toFixed(0)} m east, ${marker.north.toFixed(0)} m north of the first fix`
              : 'Local metres from the first fix; hover the plots to follow the vehicle.',
          ),
        ])
      : null,
  ]);
}

/** A round-length bar at the bottom left of the track, at most a quarter of the square's width. */
function scaleBar(extent: number) {
  const metres = scaleBarMetres(extent / 4);
  const width = (metres / extent) * SIZE;
  const y = SIZE - 14;
  return [
    h('path', { d: `M10 ${y - 4}V${y}H${(10 + width).toFixed(1)}V${y - 4}`, class: 'track-scale' }),
    h('text', { x: 10, y: y - 7, class: 'track-scale-label', 'data-testid': 'track-scale' }, `${metres >= 1000 ? `${metres / 1000} km` : `${metres} m`}`),
  ];
}
