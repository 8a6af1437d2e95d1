import { describe, expect, it } from 'vitest';
import { fixtureFrames } from './fixture-frames.ts';
import { GroupPool, NarrowBatch } from './narrow-batch.ts';
import { valueAt } from './column-arrays.ts';

/** Everything a batch's groups hold, as plain data. */
function contents(batch: NarrowBatch) {
  return [...batch.groups].map(([msgid, g]) => ({
    msgid,
    frames: [...g.frames],
    carried: [...g.carried],
    present: [...g.present],
    values: g.values.map((column) => Array.from({ length: g.frames.length }, (_, r) => String(valueAt(column, r)))),
    lengths: g.values.map((column) => column.length),
  }));
}

function fill(batch: NarrowBatch, frames: ReturnType<typeof fixtureFrames>, firstSeq: number): NarrowBatch {
  frames.forEach((f, i) => batch.add(f.frame.bytes, f.receivedUs, firstSeq + i, 0, String, i));
  return batch;
}

describe('GroupPool', () => {
  it('a batch built from given-back groups holds exactly what a batch of new groups holds', () => {
    const frames = fixtureFrames('arduplane-sitl-vtol.tlog');
    const pool = new GroupPool();
    // Larger batches first, so given-back columns hold stale values beyond the next batch's rows.
    const first = fill(new NarrowBatch(undefined, pool), frames.slice(0, 800), 1);
    pool.give(first);
    expect(first.groups.size).toBe(0);
    const next = frames.slice(800, 1100);
    const reused = fill(new NarrowBatch(undefined, pool), next, 801);
    const fresh = fill(new NarrowBatch(), next, 801);
    expect(contents(reused)).toEqual(contents(fresh));
  });

  it('hands a group back empty: no frames, no values, no column marked present', () => {
    const frames = fixtureFrames('arduplane-sitl-vtol.tlog').slice(0, 200);
    const pool = new GroupPool();
    const batch = fill(new NarrowBatch(), frames, 1);
    const msgid = frames[0]!.frame.msgid;
    expect(batch.groups.get(msgid)!.present.some((p) => p === 1)).toBe(true);
    pool.give(batch);
    const group = pool.take(msgid)!;
    expect(group.frames).toHaveLength(0);
    expect(group.carried).toHaveLength(0);
    expect(group.values.every((column) => column.length === 0)).toBe(true);
    expect(group.present.every((p) => p === 0)).toBe(true);
  });

  it('keeps at most two idle groups per message id', () => {
    const frames = fixtureFrames('arduplane-sitl-vtol.tlog').slice(0, 200);
    const pool = new GroupPool();
    for (let i = 0; i < 3; i++) pool.give(fill(new NarrowBatch(), frames, 1));
    const msgid = frames[0]!.frame.msgid;
    expect(pool.take(msgid)).toBeDefined();
    expect(pool.take(msgid)).toBeDefined();
    expect(pool.take(msgid)).toBeUndefined();
  });
});
