import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listFiles } from '../../scripts/list-files.ts';

// The committed generated code is what every package imports; if someone edits proto/ and forgets
// `npm run generate`, the wire contract and the code silently diverge. This regenerates into a temp dir
// and demands byte-identical output.
const root = resolve(import.meta.dirname, '..', '..');
const committed = join(root, 'contracts', 'src', 'gen');

describe('contracts/src/gen', () => {
  let scratch: string;
  let fresh: string;

  beforeAll(() => {
    scratch = mkdtempSync(join(tmpdir(), 'sortie-gen-freshness-'));
    fresh = join(scratch, 'gen');
    execFileSync(process.execPath, [join(root, 'scripts', 'generate.ts'), '--out', fresh], {
      cwd: root,
      stdio: 'pipe',
    });
  });

  afterAll(() => {
    rmSync(scratch, { recursive: true, force: true });
  });

  it('holds exactly the files generation produces', () => {
    expect(listFiles(committed)).toEqual(listFiles(fresh));
  });

  it('is byte-identical to a fresh `npm run generate` (run it and commit the result if this fails)', () => {
    const stale = listFiles(fresh).filter((file) => {
      const committedPath = join(committed, file);
      try {
        return !readFileSync(committedPath).equals(readFileSync(join(fresh, file)));
      } catch {
        return true;
      }
    });
    expect(stale).toEqual([]);
  });
});
