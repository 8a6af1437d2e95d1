import type { VNode } from 'preact';
import { formatUtc } from './format.ts';
import { boundText, type LimitCrossing } from './live.ts';

/** A value as a person reads it off a banner: at most six significant digits, no exponent for ordinary magnitudes. */
function reading(v: number): string {
  return Number.isFinite(v) ? String(Number(v.toPrecision(6))) : '—';
}

/**
 * One banner per limit crossing under way, critical first, saying what a test conductor acts on: the
 * severity (in words and colour), the signal, the bound it crossed, the worst value so far and when, and
 * since when. The region is always in the page, so a screen reader announces a banner as it appears.
 */
export function LimitBanner(props: { limits: LimitCrossing[] }): VNode<any> {
  const active = props.limits.filter((l) => l.active).sort((a, b) => (a.severity === b.severity ? a.start - b.start : a.severity === 'critical' ? -1 : 1));
  return (
    <div class="limit-banners" role="alert">
      {active.map((l) => (
        <p key={l.id} class={`limit-banner limit-${l.severity}`} data-testid="limit-banner" data-severity={l.severity} data-event={l.id}>
          <strong>{l.severity === 'critical' ? 'CRITICAL' : 'WARNING'}</strong> <span class="limit-what">{`${l.label ?? l.signal} ${boundText(l)}`}</span>
          {` — worst ${reading(l.worstValue)}${l.unit ? ` ${l.unit}` : ''} at ${formatUtc(l.worstTime).slice(11)} UTC · since ${formatUtc(l.start).slice(11)} UTC`}
          {l.ruleName ? <span class="limit-rule">{` · rule "${l.ruleName}"`}</span> : null}
        </p>
      ))}
    </div>
  );
}
