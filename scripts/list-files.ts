import { readdirSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

/** Files under dir, as sorted '/'-separated paths relative to dir. */
export function listFiles(dir: string): string[] {
  const files: string[] = [];
  const walk = (current: string): void => {
    for (const name of readdirSync(current)) {
      const path = join(current, name);
      if (statSync(path).isDirectory()) walk(path);
      else files.push(relative(dir, path).split(sep).join('/'));
    }
  };
  walk(dir);
  return files.sort();
}
