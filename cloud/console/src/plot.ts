import type { Channel } from '@sortie/contracts';
import { h, type VNode } from 'preact';
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import type { ConsoleApi, QuerySeries } from './api.ts';
import type { TimelineMark } from './marks.ts';
import { formatUtc } from './format.ts';
import { queryChannelId } from './signals.ts';

export interface PlotWindow {
  from: number;
  to: number;
}

/** The time axis as drawn: the plot area's left edge and width in CSS pixels within the panes, and its time range (Unix seconds). */
export interface PlotAxis {
  left: number;
  width: number;
  min: number;
  max: number;
}

interface PaneData {
  channel: Channel;
  series: QuerySeries;
}

const SYNC_KEY = 'sortie-plot';

/**
 * The plot area's width in CSS pixels: the most points a pane can show one per pixel. A drawn pane's
 * plot area is measured; before the first one exists, the panes' width less what uPlot takes around the
 * plot (the y axis' 60 px, the 32 px right padding, a little left padding), rounded down to stay within.
 */
function plotWidth(container: HTMLElement | null): number {
  const drawn = container?.querySelector('.u-over') as HTMLElement | null;
  if (drawn && drawn.clientWidth > 0) return drawn.clientWidth;
  return Math.max(100, Math.floor((container?.clientWidth ?? 800) - 100));
}

export interface PlotProps {
  api: ConsoleApi;
  experimentId: string;
  datasetId: string;
  channels: Channel[];
  window: PlotWindow | undefined;
  onWindow: (window: PlotWindow | undefined) => void;
  marks: TimelineMark[];
  /** The cursor's time (Unix seconds), or undefined when it leaves the plots. */
  onCursor: (t: number | undefined) => void;
  /** The span of the unzoomed data, once known. */
  onSpan: (span: PlotWindow) => void;
  /** Where the time axis is drawn, for what is placed under the plots on the same axis. */
  onAxis?: (axis: PlotAxis) => void;
}

/**
 * Stacked uPlot panes on one time axis. The window is re-queried whenever it changes (drag to zoom,
 * reset), asking the server for at most one point per horizontal pixel, so a pane never holds more
 * points than it can draw and zooming in brings up detail the first answer had folded away.
 */
export function Plot(props: PlotProps): VNode<any> {
  const container = useRef<HTMLDivElement>(null);
  const [panes, setPanes] = useState<PaneData[]>([]);
  // The whole-dataset view's range: the union of the series' spans, so every pane shares one time axis
  // (each pane's own data would otherwise give it its own).
  const [extent, setExtent] = useState<PlotWindow | undefined>();
  const [error, setError] = useState<string>('');
  const [loading, setLoading] = useState(false);
  const [axis, setAxisState] = useState<PlotAxis | undefined>();
  const drawnAxis = useRef<PlotAxis | undefined>(undefined);
  const setAxis = (next: PlotAxis) => {
    // Every draw reports the axis; only a changed one re-renders what is placed on it.
    const known = drawnAxis.current;
    if (known && known.left === next.left && known.width === next.width && known.min === next.min && known.max === next.max) return;
    drawnAxis.current = next;
    setAxisState(next);
    props.onAxis?.(next);
  };
  const channelKey = props.channels.map((c) => c.hypertableColName).join('\n');
  const windowKey = props.window ? `${props.window.from}-${props.window.to}` : 'all';

  // A layout effect, not an effect: Preact runs effects a frame after painting, which would hold every
  // re-query (a zoom) back by a frame before it is even sent.
  useLayoutEffect(() => {
    if (props.channels.length === 0) {
      setPanes([]);
      return;
    }
    let current = true;
    setLoading(true);
    props.api
      .query({
        experimentId: props.experimentId,
        datasetId: props.datasetId,
        channelIds: props.channels.map(queryChannelId),
        window: props.window,
        maxPointsPerChannel: plotWidth(container.current),
      })
      .then((answer) => {
        if (!current) return;
        setError('');
        setPanes(props.channels.map((channel, i) => ({ channel, series: answer.series[i]! })));
        let min = Infinity;
        let max = -Infinity;
        for (const s of answer.series) {
          if (s.times.length === 0) continue;
          min = Math.min(min, s.times[0]!);
          max = Math.max(max, s.times[s.times.length - 1]!);
        }
        setExtent(min < max ? { from: min, to: max } : undefined);
        if (!props.window && min < max) props.onSpan({ from: min, to: max });
      })
      .catch((e: unknown) => current && setError(e instanceof Error ? e.message : String(e)))
      .finally(() => current && setLoading(false));
    return () => {
      current = false;
    };
  }, [props.api, props.experimentId, props.datasetId, channelKey, windowKey]);

  const children: VNode<any>[] = [];
  children.push(
    h('div', { class: 'plot-toolbar' }, [
      h('span', { class: 'muted' }, props.window ? `Window ${formatUtc(props.window.from)} → ${formatUtc(props.window.to)} UTC` : 'Whole dataset (UTC)'),
      h('button', { type: 'button', onClick: () => props.onWindow(undefined), disabled: !props.window }, 'Reset zoom'),
      loading ? h('span', { class: 'muted', role: 'status' }, 'Loading…') : null,
      error ? h('span', { class: 'error', role: 'alert' }, `Query failed: ${error}`) : null,
    ]),
  );
  children.push(
    h(
      'div',
      { class: 'panes', ref: container },
      panes.map((pane, i) =>
        h(Pane, {
          key: pane.channel.hypertableColName,
          pane,
          index: i,
          window: props.window ?? extent,
          marks: props.marks,
          onWindow: props.onWindow,
          onCursor: props.onCursor,
          onAxis: i === 0 ? setAxis : undefined,
          showAxis: i === panes.length - 1,
        }),
      ),
    ),
  );
  children.push(h(Timeline, { marks: props.marks, axis }));
  return h('section', { class: 'plot', 'aria-label': 'Plots' }, children);
}

interface PaneProps {
  pane: PaneData;
  index: number;
  window: PlotWindow | undefined;
  marks: TimelineMark[];
  showAxis: boolean;
  onWindow: (window: PlotWindow) => void;
  onCursor: (t: number | undefined) => void;
  onAxis: ((axis: PlotAxis) => void) | undefined;
}

/** Tick labels in UTC on a 24-hour clock, as precise as the tick spacing needs (uPlot's default is a local 12-hour clock). */
function utcTicks(_u: uPlot, splits: number[], _axis: number, _space: number, increment: number): string[] {
  const end = increment < 1 ? 23 : increment < 60 ? 19 : 16;
  return splits.map((s) => formatUtc(s).slice(11, end));
}

const COLORS = ['#1f5fbf', '#b3261e', '#146c2e', '#8a4b00', '#6b2fa3', '#00687a'];
const MARK_COLORS: Record<TimelineMark['kind'], string> = {
  event: '#b3261e',
  dispatched: '#1f5fbf',
  delivered: '#00687a',
  acked: '#146c2e',
  nacked: '#8a4b00',
  timed_out: '#6b2fa3',
};

function Pane(props: PaneProps): VNode<any> {
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const latest = useRef(props);
  latest.current = props;
  const { channel, series } = props.pane;
  const shown = series.times.length;
  const downsampled = shown < series.rawPoints;

  useLayoutEffect(() => {
    const element = host.current!;
    const width = element.clientWidth || 800;
    const options: uPlot.Options = {
      width,
      height: props.showAxis ? 170 : 140,
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      legend: { show: false },
      // The same right edge on every pane (uPlot widens it for the last tick label on the pane with the
      // axis), so one instant is one pixel column in all of them and the synced cursor lines up.
      padding: [null, 32, null, null],
      scales: {
        x: {
          time: true,
          range: (_u, min, max) => {
            const w = latest.current.window;
            return w ? [w.from, w.to] : [min, max];
          },
        },
      },
      axes: [
        { show: props.showAxis, stroke: '#333', grid: { stroke: '#e3e3e3' }, values: utcTicks, space: 90, label: props.showAxis ? 'UTC' : undefined, labelSize: 18 },
        { stroke: '#333', grid: { stroke: '#e3e3e3' }, size: 60 },
      ],
      series: [{}, { label: channel.name, stroke: COLORS[props.index % COLORS.length], width: 1, points: { show: false } }],
      cursor: {
        sync: { key: SYNC_KEY, scales: ['x', null] },
        drag: { x: true, y: false, setScale: false },
      },
      hooks: {
        setSelect: [
          (u) => {
            if (u.select.width < 3) return;
            const from = u.posToVal(u.select.left, 'x');
            const to = u.posToVal(u.select.left + u.select.width, 'x');
            u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
            if (to > from) latest.current.onWindow({ from, to });
          },
        ],
        setCursor: [
          (u) => {
            const left = u.cursor.left;
            latest.current.onCursor(left === undefined || left < 0 ? undefined : u.posToVal(left, 'x'));
          },
        ],
        draw: [
          (u) => {
            // Event and command marks as thin vertical lines on every pane, behind the hover strip.
            const ctx = u.ctx;
            const { top, height } = u.bbox;
            ctx.save();
            ctx.lineWidth = Math.max(1, devicePixelRatio);
            for (const mark of latest.current.marks) {
              const x = u.valToPos(mark.t, 'x', true);
              if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
              ctx.strokeStyle = MARK_COLORS[mark.kind];
              ctx.setLineDash(mark.kind === 'event' ? [] : [4, 3]);
              ctx.beginPath();
              ctx.moveTo(x, top);
              ctx.lineTo(x, top + height);
              ctx.stroke();
            }
            ctx.restore();
            latest.current.onAxis?.({
              left: u.bbox.left / devicePixelRatio,
              width: u.bbox.width / devicePixelRatio,
              min: u.scales.x!.min!,
              max: u.scales.x!.max!,
            });
            element.dataset.drawnAt = String(performance.now());
            // The drawn time range, read by the tests to check that the panes share one axis.
            element.dataset.xMin = String(u.scales.x!.min);
            element.dataset.xMax = String(u.scales.x!.max);
            // Told to the page for bench:console, which times select → drawn and zoom → redrawn in the browser.
            window.dispatchEvent(new CustomEvent('sortie:drawn', { detail: { channel: channel.hypertableColName, points: u.data[0].length } }));
          },
        ],
      },
    };
    const instance = new uPlot(options, [Array.from(series.times), Array.from(series.values)], element);
    plot.current = instance;
    const resize = new ResizeObserver(() => instance.setSize({ width: element.clientWidth || width, height: options.height }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      instance.destroy();
      plot.current = null;
    };
  }, [channel.hypertableColName, props.showAxis]);

  // New data is drawn in the same frame it arrives in (an effect would wait for the next one).
  useLayoutEffect(() => {
    plot.current?.setData([Array.from(series.times), Array.from(series.values)]);
  }, [series]);
  useEffect(() => {
    plot.current?.redraw(false, false);
  }, [props.marks]);

  const unit = channel.unit ? ` (${channel.unit})` : '';
  return h('figure', { class: 'pane', 'data-channel': channel.hypertableColName, 'data-raw-points': series.rawPoints, 'data-shown-points': shown, 'data-downsampled': String(downsampled) }, [
    h('figcaption', null, [
      h('strong', null, `${channel.name}${unit}`),
      h('span', { class: 'muted' }, ` ${series.rawPoints.toLocaleString('en')} raw points in window · ${downsampled ? `downsampled to ${shown.toLocaleString('en')}` : 'all shown'}`),
    ]),
    h('div', { class: 'pane-canvas', ref: host, role: 'img', 'aria-label': `Plot of ${channel.name}${unit}: ${shown} points shown of ${series.rawPoints} in the window` }),
  ]);
}

/** The marks as focusable points under the plots: hover or focus shows the event's message. */
function Timeline(props: { marks: TimelineMark[]; axis: PlotAxis | undefined }): VNode<any> | null {
  const [hover, setHover] = useState<number | undefined>();
  const { axis } = props;
  const visible = useMemo(() => (axis ? props.marks.map((m, i) => ({ m, i })).filter(({ m }) => m.t >= axis.min && m.t <= axis.max) : []), [props.marks, axis]);
  if (!axis || props.marks.length === 0) return null;
  return h('div', { class: 'timeline', 'aria-label': 'Events and commands on the time axis', role: 'group' }, [
    ...visible.map(({ m, i }) =>
      h(
        'button',
        {
          type: 'button',
          class: `mark mark-${m.kind}`,
          'data-kind': m.kind,
          style: { left: `${axis.left + ((m.t - axis.min) / (axis.max - axis.min)) * axis.width}px` },
          'aria-label': `${formatUtc(m.t)} UTC ${m.label}`,
          onMouseEnter: () => setHover(i),
          onMouseLeave: () => setHover(undefined),
          onFocus: () => setHover(i),
          onBlur: () => setHover(undefined),
        },
        '',
      ),
    ),
    hover !== undefined && props.marks[hover]
      ? h(
          'div',
          { class: 'mark-tip', role: 'tooltip', style: { left: `${axis.left + ((props.marks[hover]!.t - axis.min) / (axis.max - axis.min)) * axis.width}px` } },
          `${formatUtc(props.marks[hover]!.t)} UTC — ${props.marks[hover]!.label}`,
        )
      : null,
    h(MarkLegend, { marks: visible.map(({ m }) => m) }),
  ]);
}

const MARK_NAME: Record<Exclude<TimelineMark['kind'], 'event'>, string> = {
  dispatched: 'command dispatched',
  delivered: 'command delivered',
  acked: 'command acked',
  nacked: 'command nacked',
  timed_out: 'command timed out',
};

/**
 * What the coloured marks in the window are, without hovering each: an event by its kind (LINK_LOSS,
 * NOTE…), a command step by name, each with its count.
 */
function MarkLegend(props: { marks: TimelineMark[] }): VNode<any> | null {
  const entries = new Map<string, { kind: TimelineMark['kind']; name: string; count: number }>();
  for (const m of props.marks) {
    const name = m.kind === 'event' ? m.label.split(':')[0]! : MARK_NAME[m.kind];
    const key = `${m.kind} ${name}`;
    const entry = entries.get(key);
    if (entry) entry.count++;
    else entries.set(key, { kind: m.kind, name, count: 1 });
  }
  if (entries.size === 0) return null;
  return h('ul', { class: 'mark-legend', 'data-testid': 'mark-legend' }, [
    ...[...entries.values()].map((e) =>
      h('li', { 'data-kind': e.kind }, [h('span', { class: `mark-swatch mark-${e.kind}`, 'aria-hidden': 'true' }), `${e.name}${e.count > 1 ? ` ×${e.count}` : ''}`]),
    ),
    h('li', { class: 'muted' }, 'hover or focus a mark for its time and message'),
  ]);
}
