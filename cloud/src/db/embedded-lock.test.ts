import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { embeddedHolder, markEmbeddedInUse } from './embedded-lock.ts';

let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('embedded database lock', () => {
  it('names a live holder and forgets a dead one', async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'sortie-lock-'));
    const child = spawn('sleep', ['30']);
    await writeFile(path.join(dir, 'cloud.pid'), String(child.pid));
    expect(embeddedHolder(dir)).toBe(child.pid);
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    expect(embeddedHolder(dir)).toBeUndefined();
  });

  it('is released by the server', async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'sortie-lock-'));
    const release = markEmbeddedInUse(dir);
    release();
    expect(embeddedHolder(dir)).toBeUndefined();
  });
});
