// The spool's small state file: acknowledged offset and high-water seq. It is replaced atomically
// (write temp, fsync, rename, fsync directory) so a crash leaves either the old or the new version,
// never a torn one.
import { readFile, rename, rm } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { changeFileDurably } from '../fs/fsync.ts';

export const STATE_FILE = 'state.json';
const STATE_TMP = 'state.json.tmp';
const STATE_FORMAT = 'sortie-spool-state';
const STATE_VERSION = 1;

export interface SpoolState {
  /** Every seq ≤ ackedSeq has been acknowledged by the cloud. */
  readonly ackedSeq: number;
  /** Highest seq known durable when the state was written; keeps frame_seq monotonic even when
   *  every segment has since been deleted. */
  readonly highWaterSeq: number;
}

export class SpoolStateError extends Error {
  override readonly name = 'SpoolStateError';
}

/**
 * Reads the state file; null when the spool has never persisted one. A malformed file is an error,
 * not a fresh start: with the segments already deleted, forgetting the high-water seq would reuse
 * frame_seq values, and the server would silently collapse new frames onto old rows.
 */
export async function readSpoolState(dir: string): Promise<SpoolState | null> {
  // A leftover temp file is an interrupted write whose rename never happened: the old file stands.
  await rm(join(dir, STATE_TMP), { force: true });
  let text: string;
  try {
    text = await readFile(join(dir, STATE_FILE), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new SpoolStateError(`${join(dir, STATE_FILE)} is not valid JSON`);
  }
  const p = parsed as Record<string, unknown> | null;
  if (p?.['format'] !== STATE_FORMAT || p['version'] !== STATE_VERSION) {
    throw new SpoolStateError(`${join(dir, STATE_FILE)} has an unknown format or version`);
  }
  return { ackedSeq: parseSeq(p['ackedSeq'], dir), highWaterSeq: parseSeq(p['highWaterSeq'], dir) };
}

function parseSeq(value: unknown, dir: string): number {
  const n = typeof value === 'string' && /^\d{1,20}$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n)) throw new SpoolStateError(`${join(dir, STATE_FILE)} holds a bad seq`);
  return n;
}

/** `dirHandle` is an open handle on `dir`, used to make the rename durable. */
export async function writeSpoolState(dir: string, dirHandle: FileHandle, state: SpoolState): Promise<void> {
  const body = JSON.stringify({
    format: STATE_FORMAT,
    version: STATE_VERSION,
    // Strings: the seqs are uint64 on the wire and JSON numbers stop being exact at 2^53.
    ackedSeq: String(state.ackedSeq),
    highWaterSeq: String(state.highWaterSeq),
  });
  const tmp = join(dir, STATE_TMP);
  await changeFileDurably(tmp, 'w', (fh) => fh.writeFile(body + '\n'));
  await rename(tmp, join(dir, STATE_FILE));
  await dirHandle.sync();
}
