import { describe, expect, it } from 'vitest';
import { HEAP_GROWING_PERCENT, heapFlags } from './heap.ts';

describe('heapFlags', () => {
  it('bounds the old generation’s growth on any machine', () => {
    for (const cores of [1, 2, 4, 64]) expect(heapFlags(cores)).toContain(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  });

  it('scavenges on the main thread alone on two cores or fewer, in parallel on more', () => {
    expect(heapFlags(1)).toContain('--no-parallel-scavenge');
    expect(heapFlags(2)).toContain('--no-parallel-scavenge');
    expect(heapFlags(3)).not.toContain('--no-parallel-scavenge');
    expect(heapFlags(16)).not.toContain('--no-parallel-scavenge');
  });
});
