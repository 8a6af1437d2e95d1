// What a log import's row says while it runs and when it ends, without a browser: the service's ndjson
// answer split into lines, the progress bar's value in each phase, and the outcome in words.
import type { CreateImportResponse, ImportProgress } from '@sortie/contracts';
import { formatDuration } from './format.ts';

/**
 * The complete lines of an ndjson answer that arrives in pieces: `partial` is what the last piece left
 * unfinished, `chunk` the new text. Each complete line is parsed; an empty one is skipped.
 */
export function ndjsonLines(partial: string, chunk: string): { lines: unknown[]; partial: string } {
  const text = partial + chunk;
  const end = text.lastIndexOf('\n');
  if (end < 0) return { lines: [], partial: text };
  const lines = text
    .slice(0, end)
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as unknown);
  return { lines, partial: text.slice(end + 1) };
}

/** One file's import as its row shows it. */
export type ImportState =
  | { state: 'waiting' }
  | { state: 'uploading'; bytes: number; totalBytes: number }
  | { state: 'importing'; bytes: number; totalBytes: number; messages: number }
  | { state: 'done'; answer: CreateImportResponse }
  | { state: 'failed'; message: string }
  | { state: 'cancelled' };

/** A progress report (the upload's, then the service's lines) as the row's state; `fileSize` when the report has no total. */
export function progressState(p: ImportProgress, fileSize: number): ImportState {
  const totalBytes = p.totalBytes ?? fileSize;
  return p.phase === 'upload' ? { state: 'uploading', bytes: p.bytes, totalBytes } : { state: 'importing', bytes: p.bytes, totalBytes, messages: p.messages };
}

/** `921.6 kB`, `1.2 GB`: a file's size as a person reads it (SI, as file managers show sizes). */
export function formatBytes(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`;
  const units = ['kB', 'MB', 'GB', 'TB'];
  let value = bytes;
  let unit = -1;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${value.toFixed(value < 10 ? 2 : 1)} ${units[unit]}`;
}

/** The progress bar's value out of 1: the phase's share of the file's bytes; undefined while waiting (indeterminate). */
export function progressValue(s: ImportState): number | undefined {
  switch (s.state) {
    case 'waiting':
      return undefined;
    case 'uploading':
    case 'importing':
      return s.totalBytes > 0 ? Math.min(1, s.bytes / s.totalBytes) : undefined;
    case 'done':
      return 1;
    default:
      return 0;
  }
}

/** What the row says of the import now (the outcome's details are importOutcome's). */
export function statusText(s: ImportState): string {
  switch (s.state) {
    case 'waiting':
      return 'Waiting for the file before it';
    case 'uploading':
      return `Uploading: ${formatBytes(s.bytes)} of ${formatBytes(s.totalBytes)}`;
    case 'importing':
      return `Reading the log: ${Math.round((progressValue(s) ?? 0) * 100)} %, ${s.messages.toLocaleString('en-US')} messages`;
    case 'done':
      return s.answer.duplicate ? 'Already imported' : 'Imported';
    case 'failed':
      return `Failed: ${s.message}`;
    case 'cancelled':
      return 'Cancelled';
  }
}

/** What an import that ended brought: its messages, the span on UTC and how it was placed there, its warnings. */
export function importOutcome(answer: CreateImportResponse): { facts: string[]; warnings: string[] } {
  const report = answer.report;
  if (!report) return { facts: [], warnings: [] };
  const facts = [`${report.messages.toLocaleString('en-US')} messages`];
  if (report.start && report.end) facts.push(formatDuration((Date.parse(report.end) - Date.parse(report.start)) / 1000));
  if (report.start) facts.push(`from ${report.start.slice(0, 10)} ${report.start.slice(11, 19)} UTC${report.timeSource === 'gps' ? ' (GPS time)' : ''}`);
  if (report.events > 0) facts.push(`${report.events.toLocaleString('en-US')} events`);
  // `parameters` counts the values kept: the initial set and every change.
  const initial = report.parameters - report.parameterChanges;
  if (initial > 0) facts.push(`${initial.toLocaleString('en-US')} parameters${report.parameterChanges > 0 ? `, ${report.parameterChanges} changed in flight` : ''}`);
  return { facts, warnings: report.warnings };
}
