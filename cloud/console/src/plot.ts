import type { Channel } from '@sortie/contracts';
import { h, type VNode } from 'preact';
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import type { ConsoleApi } from './api.ts';
import type { TimelineMark } from './marks.ts';
import { formatUtc } from './format.ts';
import { boundText, type LimitCrossing, type LiveSeries } from './live.ts';
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

/** What a pane draws: a Query answer's series, or the live window's samples. */
interface PaneSeries {
  times: ArrayLike<number>;
  values: ArrayLike<number>;
  rawPoints: number;
}

interface PaneData {
  channel: Channel;
  series: PaneSeries;
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
  /**
   * While following live: the stream's samples by channel id and the animation frame they were drawn
   * for. The panes draw these instead of querying, and `window` is the live window.
   */
  live?: { series: ReadonlyMap<string, LiveSeries>; frame: number };
  /** Whether the dataset is live: the live bar's "Resume live" then stands where "Reset zoom" would. */
  liveDataset?: boolean;
  /** Limit crossings, shaded over their span on every pane (the crossed bound drawn on the signal's own pane). */
  limits: LimitCrossing[];
  /** Where a crossing still under way ends on the plots: the newest sample while live, else the right edge. */
  limitsNow?: number;
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
    // Live, the stream brings the samples (below); a window or the whole dataset is queried.
    if (props.live) return;
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
  }, [props.api, props.experimentId, props.datasetId, channelKey, windowKey, !props.live]);

  // A new series object per frame (the arrays are copied into uPlot), so each pane redraws once per frame.
  const livePanes = useMemo(
    () =>
      props.live &&
      props.channels.map((channel) => {
        const s = props.live!.series.get(queryChannelId(channel));
        return { channel, series: { times: s?.times ?? [], values: s?.values ?? [], rawPoints: s?.times.length ?? 0 } };
      }),
    [props.live?.frame, props.live?.series, channelKey],
  );
  const shownPanes = livePanes ?? panes;

  const children: VNode<any>[] = [];
  children.push(
    h('div', { class: 'plot-toolbar' }, [
      h(
        'span',
        { class: 'muted' },
        props.live && props.window
          ? `Live window ${formatUtc(props.window.from)} → ${formatUtc(props.window.to)} UTC`
          : props.window
            ? `Window ${formatUtc(props.window.from)} → ${formatUtc(props.window.to)} UTC`
            : 'Whole dataset (UTC)',
      ),
      props.liveDataset ? null : h('button', { type: 'button', onClick: () => props.onWindow(undefined), disabled: !props.window }, 'Reset zoom'),
      loading && !props.live ? h('span', { class: 'muted', role: 'status' }, 'Loading…') : null,
      error ? h('span', { class: 'error', role: 'alert' }, `Query failed: ${error}`) : null,
    ]),
  );
  children.push(
    h(
      'div',
      { class: 'panes', ref: container },
      shownPanes.map((pane, i) =>
        h(Pane, {
          key: pane.channel.hypertableColName,
          pane,
          index: i,
          window: props.window ?? extent,
          live: props.live !== undefined,
          marks: props.marks,
          limits: props.limits,
          limitsNow: props.limitsNow,
          onWindow: props.onWindow,
          onCursor: props.onCursor,
          onAxis: i === 0 ? setAxis : undefined,
          showAxis: i === shownPanes.length - 1,
        }),
      ),
    ),
  );
  children.push(h(LimitSpans, { limits: props.limits, now: props.limitsNow, axis }));
  children.push(h(Timeline, { marks: props.marks, axis }));
  return h('section', { class: 'plot', 'aria-label': 'Plots' }, children);
}

interface PaneProps {
  pane: PaneData;
  index: number;
  window: PlotWindow | undefined;
  live: boolean;
  marks: TimelineMark[];
  limits: LimitCrossing[];
  limitsNow: number | undefined;
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

// Warning amber and critical red: a translucent fill over the crossing's span, a solid stripe along its top.
const LIMIT_FILL = { warning: 'rgba(214, 140, 0, 0.2)', critical: 'rgba(200, 30, 30, 0.16)' };
const LIMIT_STROKE = { warning: '#9a5b00', critical: '#b3261e' };

/** Whether a crossing is about this pane's channel (a rule names it as Query does: a wide channel's index, a signal's name). */
function ofChannel(l: LimitCrossing, channel: Channel): boolean {
  return l.signal === queryChannelId(channel);
}

/**
 * The crossings over their span, under the grid and the line (`spans`, before uPlot draws): on every
 * pane, so an exceedance of one signal shows against all the others at that moment. Over the line
 * (`bounds`, after): the crossed bound as a dashed line on the signal's own pane, where a grid line at
 * the same round value would otherwise hide it. Returns how many spans are on the pane.
 */
function drawLimits(u: uPlot, limits: readonly LimitCrossing[], now: number | undefined, channel: Channel, layer: 'spans' | 'bounds'): number {
  const { left, top, width, height } = u.bbox;
  const ctx = u.ctx;
  let drawn = 0;
  ctx.save();
  for (const l of limits) {
    const x0 = Math.max(left, u.valToPos(l.start, 'x', true));
    // At least two pixels, so a crossing shorter than a pixel column still shows.
    const x1 = Math.max(x0 + 2 * devicePixelRatio, Math.min(left + width, u.valToPos(l.end ?? now ?? Infinity, 'x', true)));
    if (x0 >= left + width || x1 <= left) continue;
    drawn++;
    if (layer === 'spans') {
      ctx.fillStyle = LIMIT_FILL[l.severity];
      ctx.fillRect(x0, top, x1 - x0, height);
      ctx.fillStyle = LIMIT_STROKE[l.severity];
      ctx.fillRect(x0, top, x1 - x0, 4 * devicePixelRatio);
      continue;
    }
    if (!ofChannel(l, channel)) continue;
    ctx.strokeStyle = LIMIT_STROKE[l.severity];
    ctx.lineWidth = 1.5 * devicePixelRatio;
    ctx.setLineDash([6 * devicePixelRatio, 4 * devicePixelRatio]);
    for (const bound of [l.low, l.high]) {
      if (bound === null) continue;
      const y = u.valToPos(bound, 'y', true);
      if (y < top || y > top + height) continue;
      ctx.beginPath();
      ctx.moveTo(left, y);
      ctx.lineTo(left + width, y);
      ctx.stroke();
    }
  }
  ctx.restore();
  return drawn;
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
        // The data's range, widened to the bound of any crossing of this signal, so the dashed bound line is on the pane.
        y: {
          range: (_u, min, max) => {
            let lo: number | null = min;
            let hi: number | null = max;
            for (const l of latest.current.limits) {
              if (!ofChannel(l, channel)) continue;
              for (const b of [l.low, l.high]) {
                if (b === null) continue;
                lo = lo === null ? b : Math.min(lo, b);
                hi = hi === null ? b : Math.max(hi, b);
              }
            }
            return lo === null || hi === null ? [null, null] : uPlot.rangeNum(lo, hi, 0.1, true);
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
        drawClear: [
          (u) => {
            element.dataset.limitBands = String(drawLimits(u, latest.current.limits, latest.current.limitsNow, channel, 'spans'));
          },
        ],
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
            drawLimits(u, latest.current.limits, latest.current.limitsNow, channel, 'bounds');
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

  // New data is drawn in the same frame it arrives in (an effect would wait for the next one), and
  // drawn now: batch() commits at once where setData alone would draw in a later microtask, so once the
  // views have committed, the pixels are on the canvas (what the live timings measure).
  useLayoutEffect(() => {
    plot.current?.batch(() => plot.current!.setData([Array.from(series.times), Array.from(series.values)]));
  }, [series]);
  useEffect(() => {
    plot.current?.redraw(false, false);
  }, [props.marks, props.limits]);

  const unit = channel.unit ? ` (${channel.unit})` : '';
  return h('figure', { class: 'pane', 'data-channel': channel.hypertableColName, 'data-raw-points': series.rawPoints, 'data-shown-points': shown, 'data-downsampled': String(downsampled) }, [
    h('figcaption', null, [
      h('strong', null, `${channel.name}${unit}`),
      h(
        'span',
        { class: 'muted' },
        props.live
          ? ` ${shown.toLocaleString('en')} points in the live window`
          : ` ${series.rawPoints.toLocaleString('en')} raw points in window · ${downsampled ? `downsampled to ${shown.toLocaleString('en')}` : 'all shown'}`,
      ),
    ]),
    h('div', { class: 'pane-canvas', ref: host, role: 'img', 'aria-label': `Plot of ${channel.name}${unit}: ${shown} points shown of ${series.rawPoints} in the window` }),
  ]);
}

/**
 * The crossings' spans under the plots on the same axis, as elements: what the canvas shades, readable
 * by a screen reader (and by the tests) with the signal, the bound and when.
 */
function LimitSpans(props: { limits: LimitCrossing[]; now: number | undefined; axis: PlotAxis | undefined }): VNode<any> | null {
  const { axis } = props;
  if (!axis || props.limits.length === 0) return null;
  const x = (t: number) => axis.left + Math.min(1, Math.max(0, (t - axis.min) / (axis.max - axis.min))) * axis.width;
  return h(
    'ul',
    { class: 'limit-spans', 'aria-label': 'Limit crossings on the time axis' },
    props.limits
      .filter((l) => l.start <= axis.max && (l.end ?? Infinity) >= axis.min)
      .map((l) => {
        const end = l.end ?? props.now ?? axis.max;
        const text = `${l.severity} limit: ${l.label ?? l.signal} ${boundText(l)} from ${formatUtc(l.start)} UTC${l.end === undefined ? ', still crossed' : ` to ${formatUtc(l.end)} UTC`}`;
        return h(
          'li',
          {
            key: l.id,
            class: `limit-span limit-${l.severity}`,
            'data-severity': l.severity,
            'data-active': String(l.active),
            style: { left: `${x(l.start)}px`, width: `${Math.max(2, x(end) - x(l.start))}px` },
            title: text,
          },
          h('span', { class: 'sr-only' }, text),
        );
      }),
  );
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
