import { rename } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { changeFileDurably, syncDirectory } from './fsync.ts';

/**
 * Replace `path` with `text` so that after a crash it holds either the old or the new content, never a
 * torn mix: write a temp file beside it, fsync, rename over, fsync the directory (the rename itself
 * is only durable once the directory is).
 */
export async function writeFileAtomically(path: string, text: string): Promise<void> {
  const tmp = join(dirname(path), `.${basename(path)}.tmp`);
  await changeFileDurably(tmp, 'w', (fh) => fh.writeFile(text));
  await rename(tmp, path);
  await syncDirectory(dirname(path));
}
