import type { VNode } from 'preact';
import { useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { formatUtc } from './format.ts';
import { bandLabel, spanText, type ModeSpan } from './heartbeat.ts';
import type { PlotAxis, PlotWindow } from './plot.tsx';

/** A segment's left and right padding and its 1 px divider (styles.css `.band`): what its text cannot use. */
const SEGMENT_CHROME_PX = 9;

let canvas: CanvasRenderingContext2D | null | undefined;
/** Text width in the band's own font, measured on a canvas (allowed by the CSP, nothing is drawn). */
function measurer(font: string): (text: string) => number {
  canvas ??= document.createElement('canvas').getContext('2d');
  if (!canvas || !font) return (text) => text.length * 8;
  const context = canvas;
  return (text) => {
    context.font = font;
    return context.measureText(text).width;
  };
}

interface Props {
  spans: ModeSpan[];
  /** The time range the band covers (the plots' axis, the window, or the flight). */
  range: PlotWindow;
  /** The plots' axis when plots are shown: the band is drawn on its pixels, under them. */
  axis: PlotAxis | undefined;
  /** The flight's last HEARTBEAT-or-fix time, for the live tests (data-end). */
  end: number | undefined;
}

/**
 * The vehicle's flight mode and armed state over time: one segment per span, each labelled with as much
 * of its name as fits its pixels (bandLabel), the whole name on hover or keyboard focus. Segments are
 * clamped to the band, so the last one ends at the band's right edge at most, text included.
 */
export function ModeBand(props: Props): VNode<any> {
  const row = useRef<HTMLDivElement>(null);
  const [rowWidth, setRowWidth] = useState(0);
  const [font, setFont] = useState('');
  const [tip, setTip] = useState<number | undefined>();
  useLayoutEffect(() => {
    const el = row.current;
    if (!el) return;
    setFont(getComputedStyle(el).font);
    const observer = new ResizeObserver(() => setRowWidth(el.clientWidth));
    observer.observe(el);
    setRowWidth(el.clientWidth);
    return () => observer.disconnect();
  }, []);

  const { from, to } = props.range;
  const axis = props.axis;
  // Pixels from the row's left edge: on the plots' axis, or across the whole row without plots.
  const left = axis ? axis.left : 0;
  const width = axis ? axis.width : rowWidth;
  const measure = useMemo(() => measurer(font), [font]);
  const segments = props.spans
    .map((span, index) => {
      const a = Math.max(0, (span.from - from) / (to - from));
      const b = Math.min(1, (span.to - from) / (to - from));
      return { span, index, x: left + a * width, w: Math.max(0, b - a) * width };
    })
    .filter((s) => s.span.to > from && s.span.from < to && s.w > 0);
  const shown = tip === undefined ? undefined : segments.find((s) => s.index === tip);

  return (
    <div class="state-band" role="group" aria-label="Flight mode and armed state" data-end={props.end}>
      <div class="band-row" ref={row}>
        {segments.map((s) => (
          <span
            key={`${s.span.from}`}
            class={`band ${s.span.armed ? 'armed' : 'disarmed'}`}
            style={{ left: `${s.x}px`, width: `${s.w}px` }}
            tabIndex={0}
            aria-label={`${spanText(s.span)} from ${formatUtc(s.span.from)} UTC`}
            data-mode={s.span.mode}
            data-armed={s.span.armed}
            onMouseEnter={() => setTip(s.index)}
            onMouseLeave={() => setTip(undefined)}
            onFocus={() => setTip(s.index)}
            onBlur={() => setTip(undefined)}
          >
            {width > 0 ? bandLabel(s.span, s.w - SEGMENT_CHROME_PX, measure) : ''}
          </span>
        ))}
      </div>
      {shown ? (
        <BandTip
          text={`${spanText(shown.span)} from ${formatUtc(shown.span.from)} UTC`}
          centre={shown.x + shown.w / 2}
          min={left}
          max={left + width}
          measure={measure}
        />
      ) : null}
    </div>
  );
}

/** The whole text of a segment, centred under it and kept inside the band (a span at an edge would push it off the page). */
function BandTip(p: { text: string; centre: number; min: number; max: number; measure: (text: string) => number }): VNode<any> {
  // Its padding (styles.css `.band-tip`) on either side of the text.
  const half = (p.measure(p.text) + 16) / 2;
  const x = p.max - p.min <= 2 * half ? (p.min + p.max) / 2 : Math.min(Math.max(p.centre, p.min + half), p.max - half);
  return (
    <div class="band-tip" role="tooltip" style={{ left: `${x}px` }}>
      {p.text}
    </div>
  );
}
