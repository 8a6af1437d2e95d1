import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

// PGlite is one process's database: a second process opening the same folder sees stale data and can
// corrupt it. The server marks the folder while it runs; the admin CLI refuses to open a marked folder.

const FILE = 'cloud.pid';

export function markEmbeddedInUse(dataDir: string): () => void {
  const file = path.resolve(dataDir, FILE);
  writeFileSync(file, String(process.pid));
  return () => rmSync(file, { force: true });
}

/** The pid of a live process holding the embedded database, if any. */
export function embeddedHolder(dataDir: string): number | undefined {
  let pid: number;
  try {
    pid = Number(readFileSync(path.resolve(dataDir, FILE), 'utf8').trim());
  } catch {
    return undefined;
  }
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined;
  }
}
