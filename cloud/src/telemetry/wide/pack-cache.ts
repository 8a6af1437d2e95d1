import type { M4 } from '../series/m4.ts';
import { pack, mergeSlots } from './rollup-packs.ts';

/**
 * The rollup packs a dataset's writer stored last: at each channel group and width, the latest bucket it
 * wrote, with the bytes it wrote there. A stream writes in time order, so its next batch touches these
 * same packs (the coarse buckets, and the finest one its last batch ended in) and otherwise only buckets
 * later than any written yet. Knowing both, the writer can merge its batch into the rollups without
 * reading them first, and the append is one statement again (wide-writer.ts).
 *
 * What is remembered is a guess, never trusted: the statement writes a pack over only the bytes
 * remembered here (compared under a row lock), and inserts a pack it takes for new without `on
 * conflict`. Another writer, another replica or a merge in between makes the statement write nothing
 * (or fail with a unique violation), and the batch is written the way that reads the packs.
 */
export class PackCache {
  /** `group/width` → the latest bucket written at that width, as written. */
  readonly #latest = new Map<string, { bucket: number; slots: ReadonlyArray<M4 | undefined>; bytes: Uint8Array }>();

  /**
   * The batch's packs merged into what is remembered: for each delta the pack to write, with the bytes it
   * replaces when it is a remembered one. Undefined when any delta is neither remembered nor later than
   * every bucket of its width written yet (late data, a group not written yet): those must be read.
   */
  plan(deltas: Iterable<PackDelta>): KnownPack[] | undefined {
    const out: KnownPack[] = [];
    for (const delta of deltas) {
      const latest = this.#latest.get(`${delta.group}/${delta.widthMs}`);
      if (!latest || delta.bucket < latest.bucket) return undefined;
      const stored = delta.bucket === latest.bucket ? latest : undefined;
      // Copies: a statement that writes nothing leaves what is remembered as it was.
      const slots = mergeSlots(stored ? stored.slots.map((m4) => m4 && { ...m4 }) : [], delta.slots);
      out.push({ group: delta.group, widthMs: delta.widthMs, bucket: delta.bucket, slots, bytes: pack(slots), old: stored?.bytes });
    }
    return out.sort((a, b) => a.group - b.group || a.widthMs - b.widthMs || a.bucket - b.bucket);
  }

  /** Packs now stored (committed) as given: each one becomes its width's latest unless a later one is remembered. */
  remember(written: Iterable<{ group: number; widthMs: number; bucket: number; slots: ReadonlyArray<M4 | undefined>; bytes?: Uint8Array }>): void {
    for (const p of written) {
      const key = `${p.group}/${p.widthMs}`;
      const latest = this.#latest.get(key);
      if (latest && latest.bucket > p.bucket) continue;
      this.#latest.set(key, { bucket: p.bucket, slots: p.slots, bytes: p.bytes ?? pack(p.slots) });
    }
  }

  /** After a write whose packs are not known here (a merge of overlapping rows): read them next time. */
  forget(): void {
    this.#latest.clear();
  }
}

/** A batch's aggregates for one pack (`packDeltas` in rollups.ts). */
export interface PackDelta {
  group: number;
  widthMs: number;
  bucket: number;
  slots: ReadonlyArray<M4 | undefined>;
}

/** A pack as one statement writes it: `bytes` over `old` when it is stored, or inserted when `old` is undefined. */
export interface KnownPack {
  group: number;
  widthMs: number;
  bucket: number;
  slots: Array<M4 | undefined>;
  bytes: Uint8Array;
  old: Uint8Array | undefined;
}
