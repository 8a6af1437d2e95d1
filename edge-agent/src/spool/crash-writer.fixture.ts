// Child process for spool-crash.test.ts: appends to the spool in `argv[2]` until it is killed, and
// after every `await flush()` prints which seqs are now durable. Runs directly under Node:
//   node edge-agent/src/spool/crash-writer.fixture.ts <dir>
// Output lines: "open <nextSeq>", "durable <firstSeq> <lastSeq>", "ack <seq>".
import { Spool } from './spool.ts';

const dir = process.argv[2];
if (!dir) throw new Error('usage: crash-writer.fixture.ts <dir>');

/** Same function as in spool-crash.test.ts: the payload is derived from the seq it was written under. */
function payloadForSeq(seq: bigint): Buffer {
  const b = Buffer.alloc(40);
  b.writeBigUInt64LE(seq, 0);
  for (let k = 8; k < 40; k++) b[k] = Number((seq * 131n + BigInt(k) * 17n) & 0xffn);
  return b;
}

// Small segments so that kills also land around rolls and segment deletions.
const spool = await Spool.open({ dir, segmentBytes: 32 * 1024, ackPersistIntervalMs: 5 });
process.stdout.write(`open ${spool.nextSeq}\n`);

let batches = 0;
for (;;) {
  const n = 1 + Math.floor(Math.random() * 400);
  const first = spool.nextSeq;
  let last = first;
  for (let i = 0; i < n; i++) {
    const expected = spool.nextSeq;
    last = spool.append(payloadForSeq(expected), BigInt(Date.now()) * 1000n);
    if (last !== expected) throw new Error(`append returned ${last}, expected ${expected}`);
    // Some appends also wait individually, so kills land with appendDurable callers in flight.
    if (i % 97 === 0) void spool.appendDurable(payloadForSeq(spool.nextSeq), 0n);
  }
  last = spool.nextSeq - 1n;
  await spool.flush();
  process.stdout.write(`durable ${first} ${last}\n`);
  // Acknowledge with a lag, like an uplink that is a little behind, to exercise state persistence
  // and segment deletion under the kill as well.
  if (++batches % 5 === 0 && last > 3000n) {
    const ackTo = last - 3000n;
    process.stdout.write(`ack ${ackTo}\n`);
    spool.ack(ackTo);
  }
}
