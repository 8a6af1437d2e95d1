// The flight-mode band's logic without a browser: HEARTBEAT signals as Query and Follow return them, one
// series per field, joined back into HEARTBEATs and turned into mode spans by the contracts' one naming
// (mavlink/modes.ts: only the vehicle's autopilot counts, every ArduPilot vehicle and PX4 named); and a
// label that fits the pixels a span gets, so a narrow span reads as a clean abbreviation or as nothing,
// never as the first letters the box happened to show.
import { modeSpans, type ModeSpan } from '@sortie/contracts';
import { valuesAt } from './live.ts';

export type { ModeSpan };

interface Series {
  times: ArrayLike<number>;
  values: ArrayLike<number>;
}

/**
 * Mode spans from the four HEARTBEAT series (type, autopilot, base_mode, custom_mode). They are fields of
 * the same rows, so they share their times; each is read at the type series' instants (valuesAt takes the
 * same index where the times agree, which keeps two HEARTBEATs of one instant apart).
 */
export function heartbeatSpans(type: Series, autopilot: Series, baseMode: Series, customMode: Series, end: number): ModeSpan[] {
  return modeSpans(
    {
      times: type.times,
      type: type.values,
      autopilot: valuesAt(type.times, autopilot.times, autopilot.values),
      baseMode: valuesAt(type.times, baseMode.times, baseMode.values),
      customMode: valuesAt(type.times, customMode.times, customMode.values),
    },
    end,
  );
}

/** A span's whole text, what hover and focus show and screen readers read. */
export function spanText(span: ModeSpan): string {
  return `${span.mode}${span.armed ? ' · armed' : ''}`;
}

/** Fewer characters than this, and an elided name says nothing ("AV…"): the span shows its colour alone. */
const MIN_ELIDED_CHARS = 3;

/**
 * The most of a span's text that fits `room` pixels by `measure`: the whole text, else the mode alone (the
 * colour already says armed), else the mode cut at a character with an ellipsis, else nothing.
 */
export function bandLabel(span: ModeSpan, room: number, measure: (text: string) => number): string {
  const whole = spanText(span);
  if (measure(whole) <= room) return whole;
  if (measure(span.mode) <= room) return span.mode;
  for (let n = span.mode.length - 1; n >= MIN_ELIDED_CHARS; n--) {
    const cut = `${span.mode.slice(0, n).trimEnd()}…`;
    if (measure(cut) <= room) return cut;
  }
  return '';
}
