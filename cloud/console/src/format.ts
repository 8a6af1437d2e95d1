/** `2026-11-24 21:16:05.123` in UTC: every time the console shows is UTC, labelled as such beside it. */
export function formatUtc(seconds: number): string {
  if (!Number.isFinite(seconds)) return '—';
  return new Date(seconds * 1000).toISOString().replace('T', ' ').replace('Z', '');
}

export function formatIso(text: string | null | undefined): string {
  if (!text) return '—';
  const ms = Date.parse(text);
  return Number.isFinite(ms) ? `${formatUtc(ms / 1000)} UTC` : text;
}

/** RFC 3339 with up to nanoseconds → Unix seconds, keeping the microseconds Date.parse would drop. */
export function timestampSeconds(text: string): number {
  const match = /\.(\d+)/.exec(text);
  const whole = Date.parse(text.replace(/\.\d+/, '')) / 1000;
  return match ? whole + Number(`0.${match[1]}`) : whole;
}
