/**
 * Protobuf varints written by hand, for the messages the server (series-wire.ts) and the benchmarks'
 * client (cloud/bench/grpc-wire.ts) encode without protobuf-es. Numbers, not bigints: every value these
 * writers meet is a safe integer.
 */

/** Bytes of the varint of a non-negative safe integer, or of a negative int64 (always 10). */
export function varintLength(n: number): number {
  if (n < 0) return 10;
  let length = 1;
  while (n >= 128) {
    n = Math.floor(n / 128);
    length++;
  }
  return length;
}

/** Write the varint of `n` at `at`; answers the position after it. */
export function writeVarint(buf: Uint8Array, at: number, n: number): number {
  if (n < 0) {
    // An int64 below zero: its two's complement, ten bytes (pre-1970 seconds).
    let v = BigInt.asUintN(64, BigInt(n));
    for (let i = 0; i < 9; i++) {
      buf[at++] = Number(v & 0x7fn) | 0x80;
      v >>= 7n;
    }
    buf[at++] = Number(v);
    return at;
  }
  while (n >= 128) {
    buf[at++] = (n % 128) | 0x80;
    n = Math.floor(n / 128);
  }
  buf[at++] = n;
  return at;
}
