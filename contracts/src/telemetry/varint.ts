/**
 * Protobuf varints by hand, for the messages encoded without protobuf-es (the cloud's Query answers,
 * grpc/rpc/series-wire.ts; the benchmarks' client, cloud/bench/grpc-wire.ts) and for the client's check
 * that a Timestamp it read by hand was written as protobuf writes it (client/src/series-wire.ts). Numbers,
 * not bigints: every value these meet is a safe integer.
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

/**
 * Bytes of a google.protobuf.Timestamp's payload as protobuf writes it: each non-zero field (seconds, then
 * nanos) as a one-byte tag and its varint, a zero field left out (proto3).
 */
export function timestampLength(seconds: number, nanos: number): number {
  return (seconds !== 0 ? 1 + varintLength(seconds) : 0) + (nanos !== 0 ? 1 + varintLength(nanos) : 0);
}
