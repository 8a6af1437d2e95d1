import { open, rename } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/**
 * Replace `path` with `text` so that after a crash it holds either the old or the new content, never a
 * torn mix: write a temp file beside it, fsync, rename over, fsync the directory (the rename itself
 * is only durable once the directory is).
 */
export async function writeFileAtomically(path: string, text: string): Promise<void> {
  const tmp = join(dirname(path), `.${basename(path)}.tmp`);
  const fh = await open(tmp, 'w');
  try {
    await fh.writeFile(text);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, path);
  const dir = await open(dirname(path), 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}
