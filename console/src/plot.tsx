import type { Channel } from '@sortie/contracts';
import type { VNode } from 'preact';
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import type { ConsoleApi } from './api.ts';
import { markColour, markName, type TimelineMark } from './marks.ts';
import { displayUnit, formatUtc, formatValue } from './format.ts';
import { readingAt, valueTickStep } from './reading.ts';
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
 * plot (the y axis' 72 px, the 32 px right padding, a little left padding), rounded down to stay within.
 */
function plotWidth(container: HTMLElement | null): number {
  const drawn = container?.querySelector('.u-over') as HTMLElement | null;
  if (drawn && drawn.clientWidth > 0) return drawn.clientWidth;
  return Math.max(100, Math.floor((container?.clientWidth ?? 800) - 112));
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
  // The synced cursor's time, and where the pointer is over the panes: the readout's place.
  const [cursorT, setCursorT] = useState<number | undefined>();
  const [pointer, setPointer] = useState<Omit<ReadoutAt, 't'> | undefined>();
  const onCursor = (t: number | undefined) => {
    setCursorT(t);
    props.onCursor(t);
  };
  const track = (e: MouseEvent) => {
    const box = container.current!.getBoundingClientRect();
    setPointer({ x: e.clientX - box.left, y: e.clientY - box.top, width: box.width, height: box.height });
  };
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
    <div class="plot-toolbar">
      <span class="muted">
        {props.live && props.window
          ? `Live window ${formatUtc(props.window.from)} → ${formatUtc(props.window.to)} UTC`
          : props.window
            ? `Window ${formatUtc(props.window.from)} → ${formatUtc(props.window.to)} UTC`
            : 'Whole dataset (UTC)'}
      </span>
      {props.liveDataset ? null : (
        <button type="button" onClick={() => props.onWindow(undefined)} disabled={!props.window}>
          Reset zoom
        </button>
      )}
      {loading && !props.live ? (
        <span class="muted" role="status">
          Loading…
        </span>
      ) : null}
      {error ? <span class="error" role="alert">{`Query failed: ${error}`}</span> : null}
    </div>,
  );
  children.push(
    <div class="panes" ref={container} onMouseMove={track} onMouseLeave={() => setPointer(undefined)}>
      {shownPanes.map((pane, i) => (
        <Pane
          key={pane.channel.hypertableColName}
          pane={pane}
          index={i}
          window={props.window ?? extent}
          live={props.live !== undefined}
          marks={props.marks}
          limits={props.limits}
          limitsNow={props.limitsNow}
          onWindow={props.onWindow}
          onCursor={onCursor}
          onAxis={i === 0 ? setAxis : undefined}
          showAxis={i === shownPanes.length - 1}
        />
      ))}
      {pointer && cursorT !== undefined && shownPanes.length > 0 ? <Readout at={{ ...pointer, t: cursorT }} panes={shownPanes} /> : null}
    </div>,
  );
  children.push(<LimitSpans limits={props.limits} now={props.limitsNow} axis={axis} />);
  children.push(<Timeline marks={props.marks} axis={axis} />);
  return (
    <section class="plot" aria-label="Plots">
      {children}
    </section>
  );
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

/** Value ticks to the decimals of their step (uPlot's default rounds to three, which repeats a label when a latitude moves in its fifth). */
function valueTicks(splits: number[], increment: number): string[] {
  const decimals = Math.min(12, (String(increment).split('.')[1] ?? '').length);
  return splits.map((v) => v.toFixed(decimals));
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
 * (`bounds`, after): the crossed bound (stored units, drawn in the pane's `scale`) as a dashed line on the
 * signal's own pane, where a grid line at the same round value would otherwise hide it. Returns how many
 * spans are on the pane.
 */
function drawLimits(u: uPlot, limits: readonly LimitCrossing[], now: number | undefined, channel: Channel, scale: number, layer: 'spans' | 'bounds'): number {
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
      const y = u.valToPos(bound * scale, 'y', true);
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

/** A series' values in its display unit (a copy either way: uPlot keeps what it is given). */
function shownValues(values: ArrayLike<number>, scale: number): number[] {
  return scale === 1 ? Array.from(values) : Array.from(values, (v) => v * scale);
}

// A pane's height in CSS pixels, and the least room between two value ticks (their labels are 12 px high).
const PANE_HEIGHT = 160;
const AXIS_HEIGHT = 42;
const MIN_TICK_GAP = 14;

/**
 * The room uPlot is told to leave between value ticks: the spacing of the step valueTickStep chooses
 * (uPlot takes the finest round step at least that far apart, so it takes that one; its default, 30 px,
 * left two or three ticks on a pane).
 */
function valueTickSpace(_u: uPlot, _axis: number, min: number, max: number, dim: number): number {
  const step = valueTickStep(min, max, dim, MIN_TICK_GAP);
  return step === undefined ? 30 : step * (dim / (max - min)) * (1 - 1e-6);
}

function Pane(props: PaneProps): VNode<any> {
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const latest = useRef(props);
  latest.current = props;
  const { channel, series } = props.pane;
  const shown = series.times.length;
  const downsampled = shown < series.rawPoints;
  const display = displayUnit(channel.unit);

  useLayoutEffect(() => {
    const element = host.current!;
    const width = element.clientWidth || 800;
    const height = PANE_HEIGHT + (props.showAxis ? AXIS_HEIGHT : 0);
    const grid = { stroke: '#dcdcdc', width: 1 };
    const options: uPlot.Options = {
      width,
      height,
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      legend: { show: false },
      // The same right edge on every pane (uPlot widens it for the last tick label on the pane with the
      // axis), so one instant is one pixel column in all of them and the synced cursor lines up.
      padding: [8, 32, null, null],
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
                lo = lo === null ? b * display.scale : Math.min(lo, b * display.scale);
                hi = hi === null ? b * display.scale : Math.max(hi, b * display.scale);
              }
            }
            return lo === null || hi === null ? [null, null] : uPlot.rangeNum(lo, hi, 0.1, true);
          },
        },
      },
      axes: [
        // Every pane draws the time gridlines; only the bottom one labels them (the others take no room for labels).
        props.showAxis
          ? {
              stroke: '#333',
              grid,
              space: 90,
              label: 'UTC',
              labelSize: 18,
              values: (u, splits, axis, space, increment) => {
                element.dataset.timeGridlines = String(splits.length);
                return utcTicks(u, splits, axis, space, increment);
              },
            }
          : {
              grid,
              space: 90,
              size: 0,
              ticks: { show: false },
              values: (_u, splits) => {
                element.dataset.timeGridlines = String(splits.length);
                return splits.map(() => null);
              },
            },
        {
          stroke: '#333',
          grid,
          size: 72,
          space: valueTickSpace,
          values: (_u, splits, _axis, _space, increment) => {
            // How many value ticks (and gridlines) are drawn, read by the tests.
            element.dataset.valueTicks = String(splits.length);
            return valueTicks(splits, increment);
          },
        },
      ],
      series: [{}, { label: channel.name, stroke: COLORS[props.index % COLORS.length], width: 1, points: { show: false } }],
      cursor: {
        // No horizontal hair: synced, it would cross every other pane at the pointer's height, a value
        // that means nothing there; the readout gives each pane's value.
        y: false,
        sync: { key: SYNC_KEY, scales: ['x', null] },
        drag: { x: true, y: false, setScale: false },
      },
      hooks: {
        drawClear: [
          (u) => {
            element.dataset.limitBands = String(drawLimits(u, latest.current.limits, latest.current.limitsNow, channel, display.scale, 'spans'));
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
            // Event and command marks as thin vertical lines on every pane, behind the hover strip: events
            // solid, a command at its relTime solid and wider, the steps of its life dashed.
            const ctx = u.ctx;
            const { top, height } = u.bbox;
            ctx.save();
            for (const mark of latest.current.marks) {
              const x = u.valToPos(mark.t, 'x', true);
              if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
              ctx.strokeStyle = markColour(mark);
              ctx.lineWidth = (mark.kind === 'command' ? 2 : 1) * Math.max(1, devicePixelRatio);
              ctx.setLineDash(mark.kind === 'event' || mark.kind === 'command' ? [] : [4, 3]);
              ctx.beginPath();
              ctx.moveTo(x, top);
              ctx.lineTo(x, top + height);
              ctx.stroke();
            }
            ctx.restore();
            drawLimits(u, latest.current.limits, latest.current.limitsNow, channel, display.scale, 'bounds');
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
    const instance = new uPlot(options, [Array.from(series.times), shownValues(series.values, display.scale)], element);
    plot.current = instance;
    const resize = new ResizeObserver(() => instance.setSize({ width: element.clientWidth || width, height }));
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
    plot.current?.batch(() => plot.current!.setData([Array.from(series.times), shownValues(series.values, display.scale)]));
  }, [series]);
  useEffect(() => {
    plot.current?.redraw(false, false);
  }, [props.marks, props.limits]);

  const unit = display.unit ? ` (${display.unit}${display.unit !== channel.unit ? `, stored in ${channel.unit}` : ''})` : '';
  return (
    <figure
      class="pane"
      data-channel={channel.hypertableColName}
      data-raw-points={series.rawPoints}
      data-shown-points={shown}
      data-downsampled={String(downsampled)}
    >
      <figcaption>
        <strong>{`${channel.name}${unit}`}</strong>
        <span class="muted">
          {props.live
            ? ` ${shown.toLocaleString('en')} points in the live window`
            : ` ${series.rawPoints.toLocaleString('en')} raw points in window · ${downsampled ? `downsampled to ${shown.toLocaleString('en')}` : 'all shown'}`}
        </span>
      </figcaption>
      <div
        class="pane-canvas"
        ref={host}
        role="img"
        aria-label={`Plot of ${channel.name}${unit}: ${shown} points shown of ${series.rawPoints} in the window`}
      />
    </figure>
  );
}

interface ReadoutAt {
  t: number;
  /** The pointer within the panes (CSS pixels), where the readout is placed beside it. */
  x: number;
  y: number;
  width: number;
  height: number;
}

/**
 * The time under the cursor (UTC, to the millisecond) and every plotted signal's value there in its
 * display unit: one box beside the pointer for all panes, which share the cursor. It opens away from the
 * nearer edges, so it stays inside the panes.
 */
function Readout(props: { at: ReadoutAt; panes: PaneData[] }): VNode<any> {
  const { at } = props;
  const style: Record<string, string> = {};
  if (at.x > at.width / 2) style.right = `${at.width - at.x + 14}px`;
  else style.left = `${at.x + 14}px`;
  if (at.y > at.height / 2) style.bottom = `${at.height - at.y + 14}px`;
  else style.top = `${at.y + 14}px`;
  return (
    <div class="readout" data-testid="readout" style={style}>
      <div class="readout-time">{`${formatUtc(at.t)} UTC`}</div>
      <table>
        <tbody>
          {props.panes.map((p, i) => {
            const display = displayUnit(p.channel.unit);
            const raw = readingAt(p.series.times, p.series.values, at.t);
            return (
              <tr key={p.channel.hypertableColName} data-channel={p.channel.hypertableColName}>
                <th scope="row">
                  <span class="readout-swatch" style={{ background: COLORS[i % COLORS.length] }} />
                  {p.channel.name.replace(/^(mavlink|ulog|dataflash)\./, '')}
                </th>
                <td>{raw === undefined ? 'no sample' : formatValue(raw * display.scale, display.decimals)}</td>
                <td>{raw === undefined ? '' : display.unit}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

/**
 * The crossings' spans under the plots on the same axis, as elements: what the canvas shades, readable
 * by a screen reader (and by the tests) with the signal, the bound and when.
 */
function LimitSpans(props: { limits: LimitCrossing[]; now: number | undefined; axis: PlotAxis | undefined }): VNode<any> | null {
  const { axis } = props;
  if (!axis || props.limits.length === 0) return null;
  const x = (t: number) => axis.left + Math.min(1, Math.max(0, (t - axis.min) / (axis.max - axis.min))) * axis.width;
  return (
    <ul class="limit-spans" aria-label="Limit crossings on the time axis">
      {props.limits
        .filter((l) => l.start <= axis.max && (l.end ?? Infinity) >= axis.min)
        .map((l) => {
          const end = l.end ?? props.now ?? axis.max;
          const text = `${l.severity} limit: ${l.label ?? l.signal} ${boundText(l)} from ${formatUtc(l.start)} UTC${l.end === undefined ? ', still crossed' : ` to ${formatUtc(l.end)} UTC`}`;
          return (
            <li
              key={l.id}
              class={`limit-span limit-${l.severity}`}
              data-severity={l.severity}
              data-active={String(l.active)}
              style={{ left: `${x(l.start)}px`, width: `${Math.max(2, x(end) - x(l.start))}px` }}
              title={text}
            >
              <span class="sr-only">{text}</span>
            </li>
          );
        })}
    </ul>
  );
}

/** The marks as focusable points under the plots: hover or focus shows the event's message. */
function Timeline(props: { marks: TimelineMark[]; axis: PlotAxis | undefined }): VNode<any> | null {
  const [hover, setHover] = useState<number | undefined>();
  const tip = useRef<HTMLDivElement>(null);
  const { axis } = props;
  const visible = useMemo(() => (axis ? props.marks.map((m, i) => ({ m, i })).filter(({ m }) => m.t >= axis.min && m.t <= axis.max) : []), [props.marks, axis]);
  const hovered = hover !== undefined ? props.marks[hover] : undefined;
  const at = (t: number) => axis!.left + ((t - axis!.min) / (axis!.max - axis!.min)) * axis!.width;
  // The tip is centred on its mark, then moved back inside the timeline's width: a mark near either end
  // would otherwise put half the text over the channel list or off the page.
  useLayoutEffect(() => {
    const el = tip.current;
    const box = el?.parentElement;
    if (!el || !box) return;
    const width = el.offsetWidth;
    const centre = Number(el.dataset.x);
    el.style.left = `${Math.max(0, Math.min(box.clientWidth - width, centre - width / 2))}px`;
  }, [hovered, axis]);
  if (!axis || props.marks.length === 0) return null;
  return (
    <div class="timeline" aria-label="Events and commands on the time axis" role="group">
      {visible.map(({ m, i }) => (
        <button
          type="button"
          class={`mark mark-${m.kind}`}
          data-kind={m.kind}
          data-event={m.event}
          data-severity={m.severity}
          style={{ left: `${at(m.t)}px`, background: markColour(m) }}
          aria-label={`${formatUtc(m.t)} UTC ${m.label}`}
          onMouseEnter={() => setHover(i)}
          onMouseLeave={() => setHover(undefined)}
          onFocus={() => setHover(i)}
          onBlur={() => setHover(undefined)}
        >
          {''}
        </button>
      ))}
      {hovered ? (
        <div
          class="mark-tip"
          role="tooltip"
          ref={tip}
          data-x={at(hovered.t)}
          style={{ left: `${at(hovered.t)}px` }}
        >{`${formatUtc(hovered.t)} UTC — ${hovered.label}`}</div>
      ) : null}
      <MarkLegend marks={visible.map(({ m }) => m)} />
    </div>
  );
}

/**
 * What the coloured marks in the window are, without hovering each: an event by its kind (LINK_LOSS,
 * NOTE…), a command step by name, each in its own colour with its count.
 */
function MarkLegend(props: { marks: TimelineMark[] }): VNode<any> | null {
  const entries = new Map<string, { mark: TimelineMark; name: string; count: number }>();
  for (const m of props.marks) {
    const name = markName(m);
    const key = `${m.kind} ${name}`;
    const entry = entries.get(key);
    if (entry) entry.count++;
    else entries.set(key, { mark: m, name, count: 1 });
  }
  if (entries.size === 0) return null;
  return (
    <ul class="mark-legend" data-testid="mark-legend">
      {[...entries.values()].map((e) => (
        <li data-kind={e.mark.kind} data-event={e.mark.event} data-severity={e.mark.severity}>
          <span class={`mark-swatch mark-${e.mark.kind}`} aria-hidden="true" style={{ background: markColour(e.mark) }} />
          {`${e.name}${e.count > 1 ? ` ×${e.count}` : ''}`}
        </li>
      ))}
      <li class="muted">hover or focus a mark for its time and message</li>
    </ul>
  );
}
