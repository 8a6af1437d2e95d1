// Exclusive ownership of a spool directory. Two writers on one spool would interleave seqs and
// truncate each other's "torn tails", so a second open must fail loudly. A lock left by a process
// that died (SIGKILL, power loss) is taken over: crash recovery is the normal path here.
import { readFileSync } from 'node:fs';
import { open, readFile, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';

const LOCK_FILE = 'LOCK';

export class SpoolLockedError extends Error {
  override readonly name = 'SpoolLockedError';
}

export interface DirLock {
  release(): Promise<void>;
}

/** Directories locked by this process; the pid in the lock file cannot tell us that. */
const heldHere = new Set<string>();

/**
 * PIDs are reused across boots (an agent started early by systemd often gets the same pid after a
 * power cycle), so a pid alone would make a stale lock look live. The boot id tells a lock written
 * before the last reboot apart.
 */
const bootId = (() => {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return '';
  }
})();

export async function acquireDirLock(dir: string): Promise<DirLock> {
  const key = resolve(dir);
  if (heldHere.has(key)) throw new SpoolLockedError(`spool ${dir} is already open in this process`);
  const path = join(dir, LOCK_FILE);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fh = await open(path, 'wx');
      try {
        await fh.writeFile(`${process.pid} ${bootId}\n`);
      } finally {
        await fh.close();
      }
      heldHere.add(key);
      let released = false;
      return {
        async release() {
          if (released) return;
          released = true;
          heldHere.delete(key);
          await rm(path, { force: true });
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const [pidText = '', holderBoot = ''] = (await readFile(path, 'utf8').catch(() => '')).trim().split(' ');
    const pid = Number.parseInt(pidText, 10);
    const sameBoot = holderBoot === bootId;
    if (sameBoot && Number.isInteger(pid) && pid > 0 && pid !== process.pid && isAlive(pid)) {
      throw new SpoolLockedError(`spool ${dir} is already open (pid ${pid})`);
    }
    await rm(path, { force: true });
  }
  throw new SpoolLockedError(`could not take the lock on spool ${dir}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the pid exists but belongs to someone else, so it is not ours to take over.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
