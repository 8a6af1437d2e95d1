import { open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';

/**
 * Opens `path` with `flags`, lets `change` write through the handle, and fsyncs before closing: once
 * this resolves the change survives a crash. The handle is closed whatever happens.
 */
export async function changeFileDurably(path: string, flags: string, change: (fh: FileHandle) => Promise<unknown>): Promise<void> {
  const fh = await open(path, flags);
  try {
    await change(fh);
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** fsyncs a directory: a file created, renamed or removed in it is only durable once its directory is. */
export function syncDirectory(dir: string): Promise<void> {
  return changeFileDurably(dir, 'r', async () => {});
}
