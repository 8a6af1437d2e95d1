// The real CLI (`node edge-agent/src/main.ts`) as a child process for end-to-end tests, with its
// pino JSON lines parsed as they come (stdout is a pipe, so there is no status line, only records).
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const MAIN = fileURLToPath(new URL('../main.ts', import.meta.url));

export interface AgentProcess {
  readonly child: ChildProcess;
  readonly lines: Array<Record<string, unknown>>;
  readonly stderr: () => string;
  /** Exit code, or the signal that ended it. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The first line (already seen or to come) that matches. */
  waitFor(match: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** The latest `status` record. */
  lastStatus(): Record<string, unknown> | undefined;
}

export function startAgentProcess(args: string[], env: Record<string, string> = {}): AgentProcess {
  const child = spawn(process.execPath, [MAIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  const lines: Array<Record<string, unknown>> = [];
  const waiters = new Set<() => void>();
  let pending = '';
  let err = '';
  let status: Record<string, unknown> | undefined;
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (chunk: string) => {
    pending += chunk;
    let nl: number;
    while ((nl = pending.indexOf('\n')) >= 0) {
      const text = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      try {
        const line = JSON.parse(text) as Record<string, unknown>;
        lines.push(line);
        if (line['msg'] === 'status') status = line;
      } catch {
        // not JSON (cannot happen on a pipe)
      }
    }
    for (const w of [...waiters]) w();
  });
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => (err += chunk));
  let closed = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => {
      closed = true;
      for (const w of [...waiters]) w();
      resolve({ code, signal });
    }),
  );
  return {
    child,
    lines,
    stderr: () => err,
    exited,
    lastStatus: () => status,
    waitFor(match, timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          const found = lines.find(match);
          if (found) {
            finish();
            resolve(found);
          } else if (closed) {
            finish();
            reject(new Error(`the agent exited without the awaited line; last lines: ${JSON.stringify(lines.slice(-8))} stderr: ${err}`));
          }
        };
        const timer = setTimeout(() => {
          finish();
          reject(new Error(`timed out after ${timeoutMs} ms; last lines: ${JSON.stringify(lines.slice(-8))} stderr: ${err}`));
        }, timeoutMs);
        const finish = (): void => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
  };
}
