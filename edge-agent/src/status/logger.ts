// pino everywhere. Not on a terminal: plain JSON lines on stdout (one record per line, written
// synchronously so nothing is lost at exit). On a terminal: the same records as short readable
// lines; the live status line is erased first and comes back at its next redraw (≤ 250 ms), which
// keeps the redraw rate at 4/s however chatty the log is.
import { pino } from 'pino';
import type { Logger } from 'pino';

export type { Logger };

export interface LineSink {
  write(text: string): unknown;
}

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const OMIT = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'service']);

/** `12:03:04 WARN link lost sysid=1 silentFor=5.0s` from a pino JSON record. */
export function humanLine(json: string): string {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith('\n') ? json : `${json}\n`;
  }
  const time = typeof rec['time'] === 'number' ? new Date(rec['time']).toTimeString().slice(0, 8) : '';
  const level = LEVELS[rec['level'] as number] ?? String(rec['level']);
  const fields = Object.entries(rec)
    .filter(([k]) => !OMIT.has(k))
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  return `${time} ${level.padEnd(5)} ${String(rec['msg'] ?? '')}${fields ? ` ${fields}` : ''}\n`;
}

export function createLogger(options: {
  level: string;
  /** Terminal mode: `statusLine.clear()` erases the status line before each log line. */
  tty?: { out: LineSink; statusLine: { clear(): void } } | null;
}): Logger {
  const base = { level: options.level, base: { service: 'sortie-edge-agent' }, redact: { paths: ['*.apiKey', 'apiKey'], censor: '[redacted]' } };
  const tty = options.tty;
  if (!tty) return pino(base, pino.destination({ fd: 1, sync: true }));
  return pino(base, {
    write(json: string) {
      tty.statusLine.clear();
      tty.out.write(humanLine(json));
    },
  });
}
