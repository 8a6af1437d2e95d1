import { mkdtemp, readdir, readFile, rm, stat, truncate, writeFile, appendFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SpoolLockedError } from './dir-lock.ts';
import { RECORD_HEADER_BYTES, SEGMENT_HEADER_BYTES } from './record-format.ts';
import { SpoolFullError, Spool } from './spool.ts';
import type { SpoolOptions, SpoolRecord, SpoolWarning } from './spool.ts';
import { SpoolStateError } from './spool-state.ts';

const PAYLOAD_BYTES = 40;
const RECORD_BYTES = RECORD_HEADER_BYTES + PAYLOAD_BYTES;
/** 15 records of 64 bytes per segment. */
const SMALL_SEGMENT = SEGMENT_HEADER_BYTES + 15 * RECORD_BYTES;

/** A frame whose bytes are a function of `i`, so any mix-up or damage shows. */
function frame(i: number): Buffer {
  const b = Buffer.alloc(PAYLOAD_BYTES);
  for (let k = 0; k < PAYLOAD_BYTES; k++) b[k] = (i * 31 + k * 7) & 0xff;
  b.writeUInt32LE(i, 0);
  return b;
}

function recordOffset(indexInSegment: number): number {
  return SEGMENT_HEADER_BYTES + indexInSegment * RECORD_BYTES;
}

let dir: string;
const open: Spool[] = [];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'spool-test-'));
});

afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => {});
  await rm(dir, { recursive: true, force: true });
});

async function openSpool(options: Partial<SpoolOptions> = {}): Promise<Spool> {
  const spool = await Spool.open({ dir, segmentBytes: SMALL_SEGMENT, ...options });
  open.push(spool);
  return spool;
}

async function closeSpool(spool: Spool): Promise<void> {
  open.splice(open.indexOf(spool), 1);
  await spool.close();
}

/** Appends frames i = from..to-1 with receivedAtUs = 1000 + i. */
function appendRange(spool: Spool, from: number, to: number): bigint[] {
  const seqs: bigint[] = [];
  for (let i = from; i < to; i++) seqs.push(spool.append(frame(i), 1000 + i));
  return seqs;
}

async function readAll(spool: Spool, after = 0n): Promise<SpoolRecord[]> {
  return spool.readFrom(after, 1_000_000);
}

async function segmentFiles(): Promise<string[]> {
  return (await readdir(dir)).filter((n) => n.endsWith('.seg')).sort();
}

function expectFrames(records: SpoolRecord[], seqs: number[]): void {
  expect(records.map((r) => Number(r.seq))).toEqual(seqs);
  for (const r of records) {
    // seq n carries frame n - 1 in these tests (seqs start at 1, frames at 0)
    const i = Number(r.seq) - 1;
    expect(r.payload).toEqual(frame(i));
    expect(r.receivedAtUs).toBe(BigInt(1000 + i));
  }
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, k) => from + k);

async function eventually(check: () => Promise<boolean> | boolean, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('append, flush, reopen', () => {
  it('returns consecutive seqs from 1 and reads back every record after reopen', async () => {
    const spool = await openSpool();
    expect(appendRange(spool, 0, 100)).toEqual(range(1, 101).map(BigInt));
    await spool.flush();
    expect(spool.stats()).toMatchObject({ appended: 100, flushed: 100, pending: 100, durableSeq: 100n });
    await closeSpool(spool);

    const again = await openSpool();
    expect(again.recovery).toMatchObject({ records: 100, truncatedBytes: 0, corruptRecords: 0, nextSeq: 101n });
    expectFrames(await readAll(again), range(1, 101));
    expect(await again.appendDurable(frame(100), 1100)).toBe(101n);
    expect((await segmentFiles()).length).toBe(Math.ceil(101 / 15));
  });

  it('rolls segments at segmentBytes and names them by first seq', async () => {
    const spool = await openSpool();
    appendRange(spool, 0, 31);
    await spool.flush();
    expect(await segmentFiles()).toEqual([
      '00000000000000000001.seg',
      '00000000000000000016.seg',
      '00000000000000000031.seg',
    ]);
    expect((await stat(join(dir, '00000000000000000001.seg'))).size).toBe(SMALL_SEGMENT);
  });

  it('reads from any seq and in pages, via the sparse index', async () => {
    const spool = await openSpool({ segmentBytes: 1 << 20, indexStride: 8 });
    appendRange(spool, 0, 1000);
    await spool.flush();
    expectFrames(await spool.readFrom(500n, 3), [501, 502, 503]);
    expectFrames(await spool.readFrom(999n, 10), [1000]);
    expect(await spool.readFrom(1000n, 10)).toEqual([]);
    const pages: number[] = [];
    let after = 0n;
    for (;;) {
      const page = await spool.readFrom(after, 77);
      if (page.length === 0) break;
      pages.push(...page.map((r) => Number(r.seq)));
      after = page.at(-1)?.seq ?? after;
    }
    expect(pages).toEqual(range(1, 1001));
  });

  it('does not hand out records before they are on disk', async () => {
    const spool = await openSpool({ flushIntervalMs: 60_000 });
    appendRange(spool, 0, 5);
    expect(await spool.readFrom(0n, 100)).toEqual([]);
    expect(() => spool.ack(1n)).toThrow(RangeError);
    await spool.flush();
    expect((await spool.readFrom(0n, 100)).length).toBe(5);
  });

  it('shares one fsync among concurrent appendDurable callers', async () => {
    const spool = await openSpool({ segmentBytes: 1 << 20 });
    const seqs = await Promise.all(range(0, 500).map((i) => spool.appendDurable(frame(i), 1000 + i)));
    expect(seqs).toEqual(range(1, 501).map(BigInt));
    const st = spool.stats();
    expect(st.flushed).toBe(500);
    expect(st.batches).toBeLessThan(10);
  });

  it('flushes on its own within the interval', async () => {
    const spool = await openSpool({ flushIntervalMs: 5 });
    appendRange(spool, 0, 3);
    expect(spool.stats().flushed).toBe(0);
    await eventually(() => spool.stats().flushed === 3);
  });

  it('refuses a second open of the same directory', async () => {
    await openSpool();
    await expect(Spool.open({ dir })).rejects.toBeInstanceOf(SpoolLockedError);
  });

  it('takes over the lock of a process that died', async () => {
    await writeFile(join(dir, 'LOCK'), '999999999 not-this-boot\n');
    const spool = await openSpool();
    expect(spool.nextSeq).toBe(1n);
  });
});

describe('seq monotonicity', () => {
  it('continues after reopen, several times', async () => {
    let expected = 1;
    for (let round = 0; round < 3; round++) {
      const spool = await openSpool();
      expect(spool.nextSeq).toBe(BigInt(expected));
      const seqs = appendRange(spool, expected - 1, expected + 19);
      expect(seqs[0]).toBe(BigInt(expected));
      expected += 20;
      await closeSpool(spool);
    }
  });

  it('continues even when every segment file is gone', async () => {
    const spool = await openSpool();
    appendRange(spool, 0, 40);
    await spool.flush();
    spool.ack(40n);
    await closeSpool(spool);
    for (const f of await segmentFiles()) await rm(join(dir, f));

    const again = await openSpool();
    expect(again.nextSeq).toBe(41n);
    expect(await again.appendDurable(frame(40), 1040)).toBe(41n);
  });

  it('keeps the high-water seq when unacked segments are lost too', async () => {
    const spool = await openSpool();
    appendRange(spool, 0, 40);
    await spool.flush();
    spool.ack(1n);
    await spool.persistAcks(); // high-water is written along with the acked offset
    await closeSpool(spool);
    for (const f of await segmentFiles()) await rm(join(dir, f));
    const again = await openSpool();
    expect(again.nextSeq).toBe(41n);
  });
});

describe('acknowledgement', () => {
  it('deletes a segment only when all of its records are acked and the ack is persisted', async () => {
    const spool = await openSpool({ ackPersistIntervalMs: 60_000 });
    appendRange(spool, 0, 40); // segments 1-15, 16-30, 31-40
    await spool.flush();
    spool.ack(14n);
    await spool.persistAcks();
    expect((await segmentFiles()).length).toBe(3);

    spool.ack(20n);
    expect((await segmentFiles()).length).toBe(3); // acked, but not yet persisted
    await spool.persistAcks();
    expect(await segmentFiles()).toEqual(['00000000000000000016.seg', '00000000000000000031.seg']);

    spool.ack(40n);
    await spool.persistAcks();
    // The active segment stays, even fully acked: it is where the next record goes.
    expect(await segmentFiles()).toEqual(['00000000000000000031.seg']);
    expect(spool.stats()).toMatchObject({ acked: 40, pending: 0, ackedSeq: 40n, segments: 1 });
  });

  it('persists the acked offset in batches, not once per ack', async () => {
    const spool = await openSpool({ ackPersistIntervalMs: 300 });
    appendRange(spool, 0, 50);
    await spool.flush();
    for (let s = 1n; s <= 50n; s++) spool.ack(s);
    await new Promise((r) => setTimeout(r, 100));
    expect(await readdir(dir)).not.toContain('state.json');
    await eventually(async () => (await readdir(dir)).includes('state.json'));
    const state = JSON.parse(await readFile(join(dir, 'state.json'), 'utf8')) as Record<string, unknown>;
    expect(state).toMatchObject({ ackedSeq: '50', highWaterSeq: '50' });
  });

  it('survives reopen, and the iterator starts after the acked offset', async () => {
    const spool = await openSpool();
    appendRange(spool, 0, 20);
    await spool.flush();
    spool.ack(12n);
    await closeSpool(spool);

    const again = await openSpool();
    expect(again.ackedSeq).toBe(12n);
    expect(again.stats().pending).toBe(8);
    const seen: number[] = [];
    const ac = new AbortController();
    for await (const r of again.records({ signal: ac.signal })) {
      seen.push(Number(r.seq));
      if (r.seq === 20n) ac.abort();
    }
    expect(seen).toEqual(range(13, 21));
  });

  it('ignores an ack below the current offset', async () => {
    const spool = await openSpool();
    appendRange(spool, 0, 10);
    await spool.flush();
    spool.ack(8n);
    spool.ack(3n);
    expect(spool.ackedSeq).toBe(8n);
  });
});

describe('recovery', () => {
  async function writeAndClose(n: number, options: Partial<SpoolOptions> = {}): Promise<void> {
    const spool = await openSpool(options);
    appendRange(spool, 0, n);
    await closeSpool(spool);
  }

  it('truncates a record cut in half at the end of the newest segment', async () => {
    await writeAndClose(20); // last segment holds 16..20
    const last = join(dir, '00000000000000000016.seg');
    const full = (await stat(last)).size;
    await truncate(last, full - 30);
    // As after a crash: the state file (written by close) never recorded seq 20 as durable.
    await rm(join(dir, 'state.json'));

    const spool = await openSpool();
    expect(spool.recovery).toMatchObject({
      records: 19,
      truncatedBytes: RECORD_BYTES - 30,
      corruptRecords: 0,
      nextSeq: 20n,
    });
    expect((await stat(last)).size).toBe(full - RECORD_BYTES);
    expectFrames(await readAll(spool), range(1, 20));
    // The lost seq was never durable, so it is reused for the next frame; appending continues in place.
    expect(await spool.appendDurable(frame(19), 1019)).toBe(20n);
    await closeSpool(spool);
    const again = await openSpool();
    expect(again.recovery).toMatchObject({ records: 20, truncatedBytes: 0 });
    expectFrames(await readAll(again), range(1, 21));
  });

  it('cuts garbage appended after the last record', async () => {
    await writeAndClose(20);
    const last = join(dir, '00000000000000000016.seg');
    await appendFile(last, Buffer.from('\x00\x01garbage from a torn write that is not a record'));
    const spool = await openSpool();
    expect(spool.recovery.truncatedBytes).toBe(48);
    expect(spool.recovery.records).toBe(20);
    expectFrames(await readAll(spool), range(1, 21));
  });

  it('treats a corrupt last record of the newest segment as a torn tail, never reusing a durable seq', async () => {
    await writeAndClose(20);
    const last = join(dir, '00000000000000000016.seg');
    const bytes = await readFile(last);
    bytes[recordOffset(4) + 30] = (bytes[recordOffset(4) + 30] ?? 0) ^ 0x04;
    await writeFile(last, bytes);
    const spool = await openSpool();
    expect(spool.recovery).toMatchObject({ records: 19, truncatedBytes: RECORD_BYTES, corruptRecords: 0 });
    // Seq 20 had been made durable (and may have reached the cloud): the state file's high-water
    // seq keeps it from being handed to a different frame.
    expect(spool.nextSeq).toBe(21n);
    expect(await spool.appendDurable(frame(20), 1020)).toBe(21n);
    expect(await segmentFiles()).toContain('00000000000000000021.seg');
  });

  it('detects a bit flip in the middle of an older segment and keeps every good record', async () => {
    await writeAndClose(40);
    const first = join(dir, '00000000000000000001.seg');
    const bytes = await readFile(first);
    bytes[recordOffset(6) + 27] = (bytes[recordOffset(6) + 27] ?? 0) ^ 0x80; // seq 7's payload
    await writeFile(first, bytes);

    const spool = await openSpool();
    expect(spool.recovery).toMatchObject({ records: 39, truncatedBytes: 0, corruptRecords: 1 });
    expect(spool.recovery.corruptions).toEqual([
      {
        segment: '00000000000000000001.seg',
        offset: recordOffset(6),
        reason: 'bad-crc',
        skippedBytes: RECORD_BYTES,
        lostRecords: 1,
      },
    ]);
    expect((await stat(first)).size).toBe(SMALL_SEGMENT); // nothing cut from a non-last segment
    expectFrames(await readAll(spool), [...range(1, 7), ...range(8, 41)]);
    expect(spool.nextSeq).toBe(41n);
  });

  it('keeps records after a corrupt one in the newest segment instead of truncating', async () => {
    await writeAndClose(25); // last segment holds 16..25
    const last = join(dir, '00000000000000000016.seg');
    const bytes = await readFile(last);
    bytes[recordOffset(2) + 10] = (bytes[recordOffset(2) + 10] ?? 0) ^ 0x01; // seq 18's seq field
    await writeFile(last, bytes);

    const spool = await openSpool();
    expect(spool.recovery).toMatchObject({ records: 24, truncatedBytes: 0, corruptRecords: 1 });
    expectFrames(await readAll(spool), [...range(1, 18), ...range(19, 26)]);
    // A damaged segment is not appended to: the next record starts a new one.
    expect(await spool.appendDurable(frame(25), 1025)).toBe(26n);
    expect(await segmentFiles()).toContain('00000000000000000026.seg');
  });

  it('reports the rest of an older segment as lost when nothing after the damage verifies', async () => {
    await writeAndClose(40);
    const first = join(dir, '00000000000000000001.seg');
    const bytes = await readFile(first);
    bytes.fill(0xee, recordOffset(10));
    await writeFile(first, bytes);
    const spool = await openSpool();
    expect(spool.recovery.corruptRecords).toBe(5);
    expect(spool.recovery.corruptions[0]).toMatchObject({ offset: recordOffset(10), lostRecords: 5 });
    expectFrames(await readAll(spool), [...range(1, 11), ...range(16, 41)]);
  });

  it('drops a newest segment whose creation was torn, keeping seqs monotonic', async () => {
    await writeAndClose(15); // exactly one full segment
    await writeFile(join(dir, '00000000000000000016.seg'), Buffer.from('SORTIE'));
    const spool = await openSpool();
    expect(spool.recovery.removedFiles).toEqual(['00000000000000000016.seg']);
    expect(spool.nextSeq).toBe(16n);
    expectFrames(await readAll(spool), range(1, 16));
  });

  it('recovers records of a segment whose header was damaged', async () => {
    await writeAndClose(40);
    const first = join(dir, '00000000000000000001.seg');
    const bytes = await readFile(first);
    bytes[3] = 0;
    await writeFile(first, bytes);
    const spool = await openSpool();
    expect(spool.recovery.corruptions).toEqual([
      { segment: '00000000000000000001.seg', offset: 0, reason: 'bad-segment-header', skippedBytes: 0, lostRecords: 0 },
    ]);
    expectFrames(await readAll(spool), range(1, 41));
  });

  it('refuses a damaged state file rather than forgetting the high-water seq', async () => {
    await writeAndClose(5);
    await writeFile(join(dir, 'state.json'), '{"format":"sortie-spool-st');
    await expect(Spool.open({ dir })).rejects.toBeInstanceOf(SpoolStateError);
    // and the failed open released the lock
    await writeFile(join(dir, 'state.json'), '{"format":"sortie-spool-state","version":1,"ackedSeq":"2","highWaterSeq":"5"}');
    const spool = await openSpool();
    expect(spool.ackedSeq).toBe(2n);
  });

  it('ignores a state temp file left by an interrupted write', async () => {
    await writeAndClose(5);
    await writeFile(join(dir, 'state.json.tmp'), '{"half');
    const spool = await openSpool();
    expect(spool.nextSeq).toBe(6n);
    expect(await readdir(dir)).not.toContain('state.json.tmp');
  });
});

describe('size bound', () => {
  it("'drop-oldest' deletes the oldest segments, counts and reports the dropped records", async () => {
    const warnings: SpoolWarning[] = [];
    const spool = await openSpool({ maxBytes: 3 * SMALL_SEGMENT, flushBytes: 1 });
    spool.on('warning', (w) => warnings.push(w));
    for (let i = 0; i < 100; i++) await spool.appendDurable(frame(i), 1000 + i);

    const st = spool.stats();
    expect(st.bytesOnDisk).toBeLessThanOrEqual(3 * SMALL_SEGMENT);
    expect(st.dropped).toBe(warnings.reduce((n, w) => n + (w.kind === 'dropped-oldest' ? w.records : 0), 0));
    expect(st.dropped + st.pending).toBe(100);
    expect(warnings[0]).toEqual({ kind: 'dropped-oldest', segment: '00000000000000000001.seg', records: 15, firstSeq: 1n, lastSeq: 15n });
    const left = await readAll(spool);
    expect(left.at(-1)?.seq).toBe(100n);
    expectFrames(left, range(100 - st.pending + 1, 101)); // the newest survive, contiguously
    expect(await segmentFiles()).toHaveLength(st.segments);
  });

  it("'drop-oldest' reclaims acked segments before dropping anything unacked", async () => {
    const warnings: SpoolWarning[] = [];
    const spool = await openSpool({ maxBytes: 3 * SMALL_SEGMENT, flushBytes: 1, ackPersistIntervalMs: 60_000 });
    spool.on('warning', (w) => warnings.push(w));
    for (let i = 0; i < 45; i++) await spool.appendDurable(frame(i), 1000 + i);
    spool.ack(15n); // not yet persisted: the size bound reclaims it anyway
    await spool.appendDurable(frame(45), 1045);
    expect(spool.stats().dropped).toBe(0);
    expect(warnings).toEqual([]);
    expect(await segmentFiles()).not.toContain('00000000000000000001.seg');
  });

  it('refuses appends when the disk falls maxPendingBytes behind', async () => {
    const spool = await openSpool({ maxPendingBytes: 10 * RECORD_BYTES, flushIntervalMs: 60_000 });
    appendRange(spool, 0, 9); // plus the new segment's header
    expect(() => spool.append(frame(9), 1009)).toThrow(expect.objectContaining({ reason: 'max-pending' }));
    await spool.flush();
    expect(spool.append(frame(9), 1009)).toBe(10n);
  });

  it("'reject-new' refuses appends when full and keeps what it has", async () => {
    const spool = await openSpool({ maxBytes: 3 * SMALL_SEGMENT, fullPolicy: 'reject-new', flushBytes: 1 });
    let accepted = 0;
    let error: unknown = null;
    for (let i = 0; i < 100; i++) {
      try {
        await spool.appendDurable(frame(i), 1000 + i);
        accepted++;
      } catch (err) {
        error = err;
        break;
      }
    }
    expect(error).toBeInstanceOf(SpoolFullError);
    expect((error as SpoolFullError).reason).toBe('max-bytes');
    expect(accepted).toBe(45); // exactly three full segments
    expect(spool.nextSeq).toBe(46n); // a refused append consumes no seq
    expect(spool.stats()).toMatchObject({ dropped: 0, rejected: 1, pending: 45 });
    expect(() => spool.append(frame(45), 1045)).toThrow(SpoolFullError);
    expectFrames(await readAll(spool), range(1, 46));

    spool.ack(15n);
    await spool.persistAcks();
    expect(await spool.appendDurable(frame(45), 1045)).toBe(46n);
  });
});

describe('tailing', () => {
  it('follows records appended after the iterator started', async () => {
    const spool = await openSpool();
    appendRange(spool, 0, 5);
    await spool.flush();
    const ac = new AbortController();
    const seen: number[] = [];
    const consumer = (async () => {
      for await (const r of spool.records({ afterSeq: 0n, batchSize: 4, signal: ac.signal })) {
        seen.push(Number(r.seq));
        expect(r.payload).toEqual(frame(Number(r.seq) - 1));
        if (r.seq === 50n) ac.abort();
      }
    })();
    await new Promise((r) => setTimeout(r, 30));
    expect(seen).toEqual(range(1, 6));
    for (let i = 5; i < 50; i++) {
      spool.append(frame(i), 1000 + i);
      if (i % 7 === 0) await new Promise((r) => setTimeout(r, 2));
    }
    await consumer;
    expect(seen).toEqual(range(1, 51));
  });

  it('skips over records dropped while it was behind', async () => {
    const spool = await openSpool({ maxBytes: 3 * SMALL_SEGMENT, flushBytes: 1 });
    const it = spool.records({ afterSeq: 0n, batchSize: 1 });
    const firstP = it.next(); // waits for the first record, then sits on it while drops happen
    for (let i = 0; i < 100; i++) await spool.appendDurable(frame(i), 1000 + i);
    expect(spool.stats().dropped).toBeGreaterThan(0);
    const first = await firstP;
    expect(first.done).toBe(false);
    const got = [Number((first.value as SpoolRecord).seq)];
    for (;;) {
      const n = await it.next();
      if (n.done) break;
      got.push(Number(n.value.seq));
      if (n.value.seq === 100n) break;
    }
    await it.return();
    expect(got[0]).toBe(1);
    expect(got.at(-1)).toBe(100);
    expect(got.length).toBeLessThan(100);
    expect(new Set(got).size).toBe(got.length);
  });

  it('ends when the spool closes', async () => {
    const spool = await openSpool();
    const done = (async () => {
      const seen: bigint[] = [];
      for await (const r of spool.records()) seen.push(r.seq);
      return seen;
    })();
    await spool.appendDurable(frame(0), 1000);
    await new Promise((r) => setTimeout(r, 20));
    await closeSpool(spool);
    expect(await done).toEqual([1n]);
  });
});
