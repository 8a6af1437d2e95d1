import type { ImportFormat } from '@sortie/contracts';
import { MAVLINK_V1_STX, MAVLINK_V2_STX } from '@sortie/contracts';

const ULOG_MAGIC = [0x55, 0x4c, 0x6f, 0x67, 0x01, 0x12, 0x35];

// A tlog's first record: an 8-byte big-endian Unix time in µs, then a frame's start byte. Its time is
// checked to be a plausible recording date, which random bytes before an 0xFE almost never are.
const TLOG_EARLIEST_US = Date.UTC(2000, 0, 1) * 1000;
const TLOG_LATEST_US = Date.UTC(2100, 0, 1) * 1000;

/**
 * The format of a log file from its first bytes, or undefined for anything else (a file that is not a
 * log is refused before anything is created). ULog and DataFlash have magic bytes (ULog's file header;
 * DataFlash's first message, always the FMT of FMT: A3 95 80); a tlog starts with a plausible timestamp
 * then a MAVLink start byte; a raw capture with a start byte.
 */
export function detectFormat(head: Uint8Array): ImportFormat | undefined {
  if (ULOG_MAGIC.every((b, i) => head[i] === b)) return 'ulog';
  if (head[0] === 0xa3 && head[1] === 0x95 && head[2] === 0x80) return 'dataflash';
  if (head.length >= 9 && (head[8] === MAVLINK_V1_STX || head[8] === MAVLINK_V2_STX)) {
    const us = Number(new DataView(head.buffer, head.byteOffset, 8).getBigUint64(0, false));
    if (us >= TLOG_EARLIEST_US && us < TLOG_LATEST_US) return 'tlog';
  }
  if (head[0] === MAVLINK_V1_STX || head[0] === MAVLINK_V2_STX) return 'mavlink';
  return undefined;
}

/** The first bytes as hex, for the refusal's message. */
export function headHex(head: Uint8Array): string {
  return Buffer.from(head.subarray(0, 8)).toString('hex').replace(/(..)/g, '$1 ').trim();
}
