import { describe, expect, it } from 'vitest';
import { addSample, m4Of, type M4 } from '../series/m4.ts';
import { ROLLUP_WIDTHS_MS } from './rollup-levels.ts';
import { rollupDeltas } from './rollups.ts';

describe('rollupDeltas', () => {
  it('equals a brute-force aggregate of the samples at every width', () => {
    const times: number[] = [];
    const values: number[] = [];
    let t = Date.UTC(2026, 0, 1, 23, 59, 59) * 1000 - 3_000_000; // crosses a day boundary
    for (let i = 0; i < 5000; i++) {
      t += 1 + ((i * 7919) % 2500);
      times.push(t);
      values.push(Math.sin(i) * 100);
    }
    const mask = new Uint8Array(times.length).fill(1);
    mask[17] = 0; // a hole: not a sample
    const rows = rollupDeltas(3, times, values, mask);

    for (const widthMs of ROLLUP_WIDTHS_MS) {
      const expected = new Map<number, M4>();
      times.forEach((time, i) => {
        if (!mask[i]) return;
        const bucket = Math.floor(time / (widthMs * 1000)) * widthMs * 1000;
        const agg = expected.get(bucket);
        if (agg) addSample(agg, time, values[i]!);
        else expected.set(bucket, m4Of(time, values[i]!));
      });
      const got = rows.filter((r) => r.widthMs === widthMs);
      expect(got.map((r) => r.bucket)).toEqual([...expected.keys()]);
      for (const r of got) {
        const { channel, widthMs: _w, bucket, ...m4 } = r;
        expect(channel).toBe(3);
        expect(m4).toEqual(expected.get(bucket));
      }
    }
    expect(rows.filter((r) => r.widthMs === 86_400_000)).toHaveLength(2);
  });

  it('gives nothing for no samples', () => {
    expect(rollupDeltas(0, [1, 2], [1, 2], new Uint8Array(2))).toEqual([]);
  });
});
