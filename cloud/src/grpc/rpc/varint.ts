/**
 * Protobuf varints written by hand, for the messages the server (series-wire.ts) and the benchmarks'
 * client (cloud/bench/grpc-wire.ts) encode without protobuf-es. Numbers, not bigints: every value these
 * writers meet is a safe integer.
 */

/** Bytes of the varint of a non-negative safe integer, or of a negative int64 (always 10). */
export function varintLength(n: number): number {
  if (n < 0) return 10;
  // Seconds since 1970 and nanos, the bulk of what is written, fit in 31 bits: compared, not divided.
  if (n < 0x80) return 1;
  if (n < 0x4000) return 2;
  if (n < 0x200000) return 3;
  if (n < 0x10000000) return 4;
  let length = 5;
  n = Math.floor(n / 0x800000000);
  while (n > 0) {
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
  if (n <= 0x7fffffff) {
    // Below 2^31 (seconds until 2038, every nanos) the bits shift as a 32-bit integer.
    while (n >= 128) {
      buf[at++] = (n & 0x7f) | 0x80;
      n >>>= 7;
    }
    buf[at++] = n;
    return at;
  }
  while (n >= 128) {
    buf[at++] = (n % 128) | 0x80;
    n = Math.floor(n / 128);
  }
  buf[at++] = n;
  return at;
}
