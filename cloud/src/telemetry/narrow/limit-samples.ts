import type { CommittedSamples } from '../../platform/limit-watch.ts';
import { holdsNumbers, valueAt } from './column-arrays.ts';
import { signalColumn } from './message-tables.ts';
import type { NarrowBatch } from './narrow-batch.ts';

/**
 * A committed MAVLink batch as the limit watcher reads it. Only frames the write newly stored count:
 * those above the highest frame_seq the dataset held before it (`priorMaxFrameSeq`), each frame_seq once.
 * A redelivered frame collapses onto the row it wrote the first time, so it is never evaluated twice; a
 * late frame filling a gap below that mark is stored but not evaluated (the rules have moved past it).
 * Times are the frames' receive times: the agent's clock, the one a narrow dataset's events (LINK_LOSS,
 * LIMIT) are stored on and aligned from at read time (narrow/events.ts), so a crossing lands on the
 * charts' axis with them. Valid until the batch's groups go back to the pool (after the caller's await).
 */
export function narrowCommittedSamples(batch: NarrowBatch, priorMaxFrameSeq: number): CommittedSamples {
  return {
    forEach(signal, visit) {
      const where = columnOf(signal);
      if (!where) return;
      const group = batch.groups.get(where.msgid);
      if (!group) return;
      const c = group.layout.columns.findIndex((column) => column.signal === signal);
      if (c < 0 || !group.present[c]) return;
      const values = group.values[c]!;
      const frames = group.frames;
      const order = frameSeqOrder(batch, frames);
      let previous = priorMaxFrameSeq;
      for (let k = 0; k < order.length; k++) {
        const r = order[k]!;
        const f = frames[r]!;
        const seq = batch.frameSeq[f]!;
        if (seq <= previous) continue;
        previous = seq;
        // A MAVLink 1 frame did not carry the extension fields: no sample there.
        if (c >= group.carried[r]!) continue;
        const value = valueAt(values, r);
        visit(batch.receivedUs[f]!, typeof value === 'number' ? value : Number(value));
      }
    },
  };
}

/** Whether `signal` names a numeric MAVLink field of this server's dialect: one a limit can watch. */
export function isNumericMavlinkSignal(signal: string): boolean {
  return columnOf(signal) !== undefined;
}

/** Where a numeric signal's values are; undefined for a name no frame yields or a text or bytes field. Memoised: a stream asks for the same few. */
function columnOf(signal: string): { msgid: number } | undefined {
  let found = COLUMNS.get(signal);
  if (found === undefined) {
    const where = signalColumn(signal);
    found = where && holdsNumbersOrIntegers(where.column.type) ? { msgid: where.msgid } : null;
    if (COLUMNS.size >= COLUMNS_KEPT) COLUMNS.clear();
    COLUMNS.set(signal, found);
  }
  return found ?? undefined;
}
const COLUMNS = new Map<string, { msgid: number } | null>();
const COLUMNS_KEPT = 10_000;

function holdsNumbersOrIntegers(type: Parameters<typeof holdsNumbers>[0]): boolean {
  return holdsNumbers(type) || type === 'int8' || type === 'uint64';
}

/** The group's rows in frame_seq order (a stream's arrive in that order, so usually as they are). */
function frameSeqOrder(batch: NarrowBatch, frames: readonly number[]): ArrayLike<number> {
  const n = frames.length;
  const order = new Int32Array(n);
  let sorted = true;
  for (let r = 0; r < n; r++) {
    order[r] = r;
    if (r > 0 && batch.frameSeq[frames[r]!]! < batch.frameSeq[frames[r - 1]!]!) sorted = false;
  }
  if (!sorted) order.sort((a, b) => batch.frameSeq[frames[a]!]! - batch.frameSeq[frames[b]!]! || a - b);
  return order;
}
