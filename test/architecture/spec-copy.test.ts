import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * docs/spec/service-interface.md is the repository's copy of the spec the service honours, so the README's
 * link resolves in any clone. Where the campaign's shared folder sits beside the repository (developers'
 * machines and CI), the copy must equal it: a changed spec shows up here, not as a silent drift.
 */
const copy = fileURLToPath(new URL('../../docs/spec/service-interface.md', import.meta.url));
const shared = fileURLToPath(new URL('../../../shared/spec/service-interface.md', import.meta.url));

describe('the spec copy', () => {
  it('is in the repository', () => {
    expect(readFileSync(copy, 'utf8')).toMatch(/^# /);
  });

  it.runIf(existsSync(shared))('equals the shared spec beside the repository', () => {
    expect(readFileSync(copy, 'utf8')).toBe(readFileSync(shared, 'utf8'));
  });
});
