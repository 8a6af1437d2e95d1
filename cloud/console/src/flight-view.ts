import { h, type VNode } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import type { ConsoleApi } from './api.ts';
import { formatUtc } from './format.ts';
import { indexAtOrBefore, localTrack, scaleBarMetres, type LocalTrack } from './geo.ts';
import { stateSpans, type StateSpan } from './heartbeat.ts';
import type { PlotAxis, PlotWindow } from './plot.ts';

const LAT = 'mavlink.GLOBAL_POSITION_INT.lat';
const LON = 'mavlink.GLOBAL_POSITION_INT.lon';
const HB = ['mavlink.HEARTBEAT.type', 'mavlink.HEARTBEAT.base_mode', 'mavlink.HEARTBEAT.custom_mode'];
// Enough for a long flight's track and heartbeats (1 Hz) to arrive whole; a path is drawn, not pixels per point.
const MAX_POINTS = 20_000;
const SIZE = 320;

interface Props {
  api: ConsoleApi;
  experimentId: string;
  datasetId: string;
  window: PlotWindow | undefined;
  cursor: number | undefined;
  /** The plots' time axis when plots are shown: the band is drawn on it, under them. */
  axis: PlotAxis | undefined;
}

/** GPS track in local metres with a marker at the plot cursor, and the flight mode / armed band from HEARTBEAT. */
export function FlightView(props: Props): VNode<any> {
  const [track, setTrack] = useState<LocalTrack | undefined>();
  const [spans, setSpans] = useState<StateSpan[]>([]);
  const [range, setRange] = useState<PlotWindow | undefined>();
  const [error, setError] = useState('');

  useEffect(() => {
    let current = true;
    props.api
      .query({ experimentId: props.experimentId, datasetId: props.datasetId, channelIds: [LAT, LON, ...HB], maxPointsPerChannel: MAX_POINTS })
      .then(({ series }) => {
        if (!current) return;
        const [lat, lon, type, base, custom] = series;
        // lat and lon come from the same message, so their samples share timestamps while undownsampled.
        setTrack(localTrack(lat!.times, lat!.values, lon!.values));
        let end = 0;
        for (const s of series) if (s.times.length > 0) end = Math.max(end, s.times[s.times.length - 1]!);
        setSpans(stateSpans(type!.times, type!.values, base!.values, custom!.values, end));
        let start = Infinity;
        for (const s of series) if (s.times.length > 0) start = Math.min(start, s.times[0]!);
        if (start < end) setRange({ from: start, to: end });
      })
      .catch((e: unknown) => current && setError(e instanceof Error ? e.message : String(e)));
    return () => {
      current = false;
    };
  }, [props.api, props.experimentId, props.datasetId]);

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

  const marker = useMemo(() => {
    if (!track || !geometry || props.cursor === undefined) return undefined;
    const i = indexAtOrBefore(track.times, props.cursor);
    if (i < 0) return undefined;
    return { x: geometry.px(track.x[i]!), y: geometry.py(track.y[i]!), east: track.x[i]!, north: track.y[i]! };
  }, [track, geometry, props.cursor]);

  // On the plots' axis when there are plots (the same pixels for the same instant), else across the width.
  const band = props.axis ? { from: props.axis.min, to: props.axis.max } : (props.window ?? range);
  const place = (fraction: number) => (props.axis ? `${props.axis.left + fraction * props.axis.width}px` : `${fraction * 100}%`);
  return h('section', { class: 'flight', 'aria-label': 'Flight' }, [
    h('h3', null, 'Flight'),
    error ? h('p', { class: 'error', role: 'alert' }, `Flight data unavailable: ${error}`) : null,
    track && track.x.length === 0 ? h('p', { class: 'muted' }, 'No GPS fix in GLOBAL_POSITION_INT.') : null,
    band && spans.length > 0
      ? h('div', { class: 'state-band', role: 'group', 'aria-label': 'Flight mode and armed state' }, [
          h(
            'div',
            { class: 'band-row' },
            spans
              .filter((s) => s.to > band.from && s.from < band.to)
              .map((s) => {
                const left = Math.max(0, (s.from - band.from) / (band.to - band.from));
                const right = Math.min(1, (s.to - band.from) / (band.to - band.from));
                return h(
                  'span',
                  { class: `band ${s.armed ? 'armed' : 'disarmed'}`, style: { left: place(left), width: props.axis ? `${Math.max(0, right - left) * props.axis.width}px` : `${Math.max(0, right - left) * 100}%` }, title: `${s.mode}, ${s.armed ? 'armed' : 'disarmed'} from ${formatUtc(s.from)} UTC` },
                  `${s.mode}${s.armed ? ' · armed' : ''}`,
                );
              }),
          ),
        ])
      : null,
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
          h('figcaption', { class: 'muted' }, marker ? `At cursor: ${marker.east.toFixed(0)} m east, ${marker.north.toFixed(0)} m north of the first fix` : 'Local metres from the first fix; hover the plots to follow the vehicle.'),
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
