import type { Writable } from 'node:stream';

export interface Io {
  env: NodeJS.ProcessEnv;
  stdout: Writable & { isTTY?: boolean; columns?: number };
  stderr: Writable & { isTTY?: boolean; columns?: number };
}

export type Cell = string | number | boolean | null | undefined;

/**
 * Rows as an aligned text table: a header, then one line per row, columns padded to their widest cell.
 * Plain text (no colour, no box drawing), so it reads the same in a terminal, a log and `grep`.
 */
export function table(headers: readonly string[], rows: readonly (readonly Cell[])[]): string {
  const text = rows.map((row) => row.map(cellText));
  const widths = headers.map((h, i) => Math.max(h.length, ...text.map((row) => (row[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), ...text.map(line)].join('\n') + '\n';
}

function cellText(cell: Cell): string {
  if (cell === null || cell === undefined || cell === '') return '-';
  return String(cell).replaceAll('\n', ' ');
}

/**
 * JSON for scripts: one document. The client's answers are plain data already (counters as numbers);
 * a bigint, should one come, is written as a decimal string rather than throwing.
 */
export function json(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), 2) + '\n';
}

/** One CSV field (RFC 4180): quoted when it holds a comma, quote or line break. */
export function csvField(value: Cell): string {
  const text = value === null || value === undefined ? '' : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}
