/**
 * A small synthetic DataFlash log covering what the real fixture (ardusub-small.BIN) lacks: every format
 * character at its extremes, GPS time (the clock pairing), VER, ERR, EV, parameters before any timestamp
 * (old PARM without TimeUS), old TimeMS messages, messages without a clock, a text instance field, units
 * with multipliers, and strings that are not UTF-8 or have bytes after their NUL.
 *
 * `node cloud/src/imports/formats/dataflash-synthetic.ts` writes it to testdata/dataflash-synthetic.BIN;
 * its reference digest (testdata/dataflash-synthetic.dfreader.json) comes from
 * scripts/reference/dataflash-digest.py. dataflash.test.ts checks that the checked-in file is still what
 * this builds.
 */

import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

type Value = number | bigint | string | Uint8Array | readonly number[];

const SIZES: Record<string, number> = {
  b: 1, B: 1, M: 1, h: 2, H: 2, c: 2, C: 2, g: 2, i: 4, I: 4, e: 4, E: 4, L: 4, f: 4, n: 4,
  d: 8, q: 8, Q: 8, N: 16, Z: 64, a: 64,
};

/** Writes DataFlash messages. Scaled formats (c C e E L) take the raw integer; 'g' takes the half's bits. */
class LogWriter {
  private readonly parts: Uint8Array[] = [];
  private readonly formats = new Map<number, string>();

  fmt(type: number, name: string, format: string, columns: string): void {
    const length = 3 + [...format].reduce((n, c) => n + SIZES[c]!, 0);
    this.formats.set(type, format);
    this.write(0x80, 'BBnNZ', [type, length, name, format, columns]);
  }

  msg(type: number, values: readonly Value[]): void {
    this.write(type, this.formats.get(type)!, values);
  }

  bytes(): Uint8Array {
    const out = new Uint8Array(this.parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of this.parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }

  private write(type: number, format: string, values: readonly Value[]): void {
    if (values.length !== format.length) throw new Error(`type ${type}: ${values.length} values for '${format}'`);
    const size = 3 + [...format].reduce((n, c) => n + SIZES[c]!, 0);
    const buf = new Uint8Array(size);
    const view = new DataView(buf.buffer);
    buf.set([0xa3, 0x95, type]);
    let at = 3;
    [...format].forEach((c, i) => {
      const v = values[i]!;
      switch (c) {
        case 'b': view.setInt8(at, Number(v)); break;
        case 'B': case 'M': view.setUint8(at, Number(v)); break;
        case 'h': case 'c': view.setInt16(at, Number(v), true); break;
        case 'H': case 'C': case 'g': view.setUint16(at, Number(v), true); break;
        case 'i': case 'e': case 'L': view.setInt32(at, Number(v), true); break;
        case 'I': case 'E': view.setUint32(at, Number(v), true); break;
        case 'f': view.setFloat32(at, Number(v), true); break;
        case 'd': view.setFloat64(at, Number(v), true); break;
        case 'q': view.setBigInt64(at, BigInt(v as bigint), true); break;
        case 'Q': view.setBigUint64(at, BigInt(v as bigint), true); break;
        case 'a': (v as readonly number[]).forEach((x, k) => view.setInt16(at + 2 * k, x, true)); break;
        default: {
          // n N Z: text as ASCII/UTF-8, or raw bytes; zero padded
          const raw = typeof v === 'string' ? new TextEncoder().encode(v) : (v as Uint8Array);
          if (raw.length > SIZES[c]!) throw new Error(`'${c}' holds ${SIZES[c]} bytes`);
          buf.set(raw, at);
        }
      }
      at += SIZES[c]!;
    });
    this.parts.push(buf);
  }
}

const FMT = 0x80;
const UNIT = 178;
const FMTU = 177;
const MULT = 179;
const PARM = 4;
const ALL1 = 10;
const ALL2 = 11;
const GPS = 12;
const MSG = 13;
const ERR = 14;
const EV = 15;
const VER = 16;
const OLDT = 17;
const NOTM = 18;
const NVF = 19;
const IMU = 20;
const CURR = 21;
const ACC1 = 22;

const bytesOf = (...b: number[]) => Uint8Array.from(b);
const latin1 = (s: string) => Uint8Array.from(s, (c) => c.charCodeAt(0));

export function buildSyntheticDataFlash(): Uint8Array {
  const w = new LogWriter();
  w.fmt(FMT, 'FMT', 'BBnNZ', 'Type,Length,Name,Format,Columns');
  w.fmt(UNIT, 'UNIT', 'QbZ', 'TimeUS,Id,Label');
  w.fmt(FMTU, 'FMTU', 'QBNN', 'TimeUS,FmtType,UnitIds,MultIds');
  w.fmt(MULT, 'MULT', 'Qbd', 'TimeUS,Id,Mult');
  // Old PARM without TimeUS, before any timestamp: parameters at boot time unknown (null).
  w.fmt(PARM, 'PARM', 'Nf', 'Name,Value');
  w.msg(PARM, ['SYSID_THISMAV', 1]);
  w.msg(PARM, ['ARMING_CHECK', 0.5]);
  // A message without a clock before any timestamp: boot time 0.
  w.fmt(NOTM, 'NOTM', 'Bf', 'A,B');
  w.msg(NOTM, [7, 0.25]);

  let t = 1_000_000n;
  const units: [string, string][] = [
    ['-', ''], ['#', 'instance'], ['?', 'UNKNOWN'], ['s', 's'], ['m', 'm'], ['n', 'm/s'], ['d', 'deg'],
    ['D', 'deglatitude'], ['U', 'deglongitude'], ['O', 'degC'], ['v', 'V'], ['A', 'A'], ['i', 'A.s'],
    ['S', 'satellites'], ['E', 'rad/s'],
  ];
  for (const [id, label] of units) w.msg(UNIT, [t++, id.charCodeAt(0), label]);
  const mults: [string, number][] = [
    ['-', 0], ['?', 1], ['0', 1], ['A', 1e-1], ['B', 1e-2], ['C', 1e-3], ['E', 1e-5], ['F', 1e-6], ['G', 1e-7],
    ['!', 3.6], ['/', 3600],
  ];
  // ArduPilot logs its multipliers as doubles made from floats.
  for (const [id, mult] of mults) w.msg(MULT, [t++, id.charCodeAt(0), Math.fround(mult)]);

  const define = (type: number, name: string, format: string, columns: string, unitIds?: string, multIds?: string) => {
    w.fmt(type, name, format, columns);
    if (unitIds !== undefined) w.msg(FMTU, [t++, type, unitIds, multIds ?? '-'.repeat(unitIds.length)]);
  };
  define(ALL1, 'ALL1', 'QbBhHiIfdnNZcCeE', 'TimeUS,B1,UB,H1,UH,I1,UI,F,D,N4,N16,Z64,C1,UC,E1,UE', 's---v-mnm---ddm?', 'F---0-BA0---BBE-');
  define(ALL2, 'ALL2', 'QLMqQag', 'TimeUS,Lat,Mode,Q1,UQ,Arr,Half', 'sD--sAO', 'FG--FB0');
  define(GPS, 'GPS', 'QBBIHBLLf', 'TimeUS,I,Status,GMS,GWk,NSats,Lat,Lng,Alt', 's#-s-SDUm', 'F--C--GG0');
  define(MSG, 'MSG', 'QZ', 'TimeUS,Message', 's-', 'F-');
  define(ERR, 'ERR', 'QBB', 'TimeUS,Subsys,ECode', 's--', 'F--');
  define(EV, 'EV', 'QB', 'TimeUS,Id', 's-', 'F-');
  define(VER, 'VER', 'QBHBBBBIZHBI', 'TimeUS,BT,BST,Maj,Min,Pat,FWT,GH,FWS,APJ,BU,FV');
  define(OLDT, 'OLDT', 'IhB', 'TimeMS,Val,X');
  define(NVF, 'NVF', 'QNf', 'TimeUS,Name,Value', 's#-', 'F--');
  define(IMU, 'IMU', 'QBff', 'TimeUS,I,GyrX,T', 's#EO', 'F-00');
  define(CURR, 'CURR', 'Qff', 'TimeUS,Tot,Y', 'sim', 'F!E');
  define(ACC1, 'ACC1', 'Ihhh', 'TimeMS,AccX,AccY,AccZ', 'soo-', 'C---');

  t = 2_000_000n;
  w.msg(VER, [t++, 1, 0, 4, 5, 7, 255, 0xa1b2c3d4, 'ArduCopter V4.5.7 (a1b2c3d4)', 9, 2, 0x04050700]);
  w.msg(MSG, [t++, 'ArduCopter V4.5.7 (a1b2c3d4)']);
  w.msg(MSG, [t++, 'Frame: QUAD/X']);
  w.msg(MSG, [t++, 'ArduPlane V4.0.0 (not the first firmware line)']);
  w.msg(MSG, [t++, latin1('Temp 25\u00b0C')]); // not UTF-8: read as ISO-8859-1
  w.msg(MSG, [t++, 'Température ok']); // UTF-8
  w.msg(MSG, [t++, bytesOf(0x61, 0x62, 0x63, 0, 0xff, 0xfe)]); // garbage after the NUL
  w.msg(MSG, [t++, bytesOf(0xc3, 0xa9, 0, 0xff)]); // UTF-8 é, but the whole field is not UTF-8
  w.msg(PARM, ['NAN_PARAM', Number.NaN]); // now after a timestamp

  w.msg(ALL1, [t++, -128, 255, -32768, 65535, -2147483648, 4294967295, Number.NaN, Math.PI, 'ABCD', 'sixteen-chars-xx', 'z'.repeat(64), -12345, 65535, -2147483648, 4294967295]);
  w.msg(ALL1, [t++, 127, 0, 32767, 0, 2147483647, 0, -0, -Number.MAX_VALUE, 'ab', 'N', 'Z', 32767, 0, 2147483647, 1]);
  w.msg(ALL1, [t++, -1, 1, -1, 1, -1, 1, 1.5e38, 5e-324, '', '', '', 1, 1, -1, 12345678]);
  const arr = Array.from({ length: 32 }, (_, k) => (k * 2113 - 32768) | 0);
  w.msg(ALL2, [t++, -353632610, 19, -(2n ** 63n), 2n ** 64n - 1n, arr, 0x3c00]);
  w.msg(ALL2, [t++, 1495263488, 0, 2n ** 63n - 1n, 0n, arr.map((x) => -x - 1), 0xc000]);
  for (const half of [0x7bff, 0x0001, 0x7c00, 0xfc00, 0x7e00, 0x8000, 0x3555]) {
    w.msg(ALL2, [t++, 0, 1, 0n, 1n, new Array(32).fill(0), half]);
  }

  // GPS: no fix yet, then a fix on instance 1 only (no clock), then instance 0 with a 3D fix (clock).
  w.msg(GPS, [t++, 0, 1, 0, 0, 0, 0, 0, 0]);
  w.msg(GPS, [t++, 1, 3, 345600000, 2300, 12, -353632610, 1491652300, 584.5]);
  w.msg(GPS, [t++, 0, 3, 345600123, 2300, 14, -353632611, 1491652301, 584.25]);
  w.msg(GPS, [t++, 0, 6, 345600323, 2300, 15, -353632612, 1491652302, 584]);
  w.msg(GPS, [t++, 0, 2, 345600523, 2300, 15, -353632612, 1491652302, 584]); // fix lost: no clock

  w.msg(ERR, [t++, 3, 1]);
  w.msg(ERR, [t++, 99, 0]);
  w.msg(EV, [t++, 10]);
  w.msg(EV, [t++, 200]);

  w.msg(OLDT, [2_100, -5, 1]); // TimeMS 2100 → boot time 2,100,000 µs
  w.msg(NOTM, [8, -1.5]); // takes that boot time
  w.msg(ACC1, [123_456, 1, -2, 3]); // TimeMS of the sensor's own clock: a field, boot time unchanged

  t = 2_200_000n;
  w.msg(NVF, [t++, 'a', 1.5]);
  w.msg(NVF, [t++, 'b', -2.5]);
  w.msg(IMU, [t++, 0, 0.125, 40.5]);
  w.msg(IMU, [t++, 1, -0.125, 41]);
  w.msg(IMU, [t++, 0, 0.25, 40.75]);
  w.msg(IMU, [t++, 2, 1e-8, -10]);
  w.msg(CURR, [t++, 12.5, 3]);
  return w.bytes();
}

export const SYNTHETIC_FILE = fileURLToPath(new URL('./testdata/dataflash-synthetic.BIN', import.meta.url));

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(SYNTHETIC_FILE, buildSyntheticDataFlash());
  console.log(`wrote ${SYNTHETIC_FILE}`);
}
