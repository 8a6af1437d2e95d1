const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 };

/** `30d`, `12h`, `90m`, `3600s` → seconds. */
export function parseDuration(text: string): number {
  const match = /^(\d+)([smhdw])$/.exec(text.trim());
  if (!match) throw new Error(`not a duration: "${text}" (use e.g. 30d, 12h, 90m)`);
  const seconds = Number(match[1]) * UNITS[match[2]!]!;
  if (seconds <= 0) throw new Error('a duration must be positive');
  return seconds;
}
