import type { RawValue } from '../telemetry/raw-rows.ts';

/** RFC 3339 UTC with microseconds (`2026-04-01T12:00:00.000001Z`) of µs since 1970. */
export function rfc3339Micros(us: number): string {
  const ms = Math.floor(us / 1000);
  const micros = Math.round(us - ms * 1000);
  return `${new Date(ms).toISOString().slice(0, -1)}${String(micros).padStart(3, '0')}Z`;
}

/** Bytes as base64, as the MCAP export and JSON carry them (a MAVLink payload of an unknown id is one). */
export function base64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

/**
 * One CSV cell (RFC 4180): numbers as JavaScript prints them, text quoted when it holds a comma, quote, CR
 * or LF, or starts or ends with a space (a quote inside doubled), bytes as base64.
 */
export function csvCell(value: RawValue | undefined): string {
  if (value === undefined) return '';
  if (typeof value === 'number') return String(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (value instanceof Uint8Array) return csvText(base64(value));
  return csvText(value);
}

export function csvText(text: string): string {
  return /[",\r\n]|^\s|\s$/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** A file name for Content-Disposition: the dataset's name where it is plain, its id otherwise. */
export function fileName(name: string, id: string, extension: string): string {
  const plain = name.replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^[._]+/, '').slice(0, 100);
  return `${plain || id}.${extension}`;
}
