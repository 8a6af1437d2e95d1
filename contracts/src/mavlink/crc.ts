// CRC-16/MCRF4XX, which MAVLink calls "X.25": reflected polynomial 0x1021 (0x8408), init 0xFFFF, no final
// XOR. MAVLink checksums every byte after the start byte up to the CRC, then accumulates the message's
// CRC_EXTRA byte so that two ends disagreeing on a message's layout reject each other's frames.
// Pure and table-driven so it runs unchanged in Node, Deno and browsers.

export const X25_CRC_INIT = 0xffff;

const TABLE = (() => {
  const table = new Uint16Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x8408 : c >>> 1;
    table[n] = c;
  }
  return table;
})();

/** Folds one byte into a running CRC (the `crc_accumulate` of the MAVLink C library). */
export function x25Accumulate(crc: number, byte: number): number {
  return (crc >>> 8) ^ TABLE[(crc ^ byte) & 0xff]!;
}

/** CRC of `data[start, end)`, continuing from `crc` (default: a fresh CRC). */
export function x25Crc(data: Uint8Array, start = 0, end = data.length, crc = X25_CRC_INIT): number {
  for (let i = start; i < end; i++) crc = (crc >>> 8) ^ TABLE[(crc ^ data[i]!) & 0xff]!;
  return crc;
}

/**
 * The checksum a MAVLink frame carries: CRC over `frame[start + 1, crcOffset)` (header after the start
 * byte, then payload) followed by the message's CRC_EXTRA.
 */
export function mavlinkChecksum(frame: Uint8Array, start: number, crcOffset: number, crcExtra: number): number {
  return x25Accumulate(x25Crc(frame, start + 1, crcOffset), crcExtra);
}
