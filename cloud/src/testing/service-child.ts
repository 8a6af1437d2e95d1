import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const SERVICE_SCRIPT = fileURLToPath(new URL('./service-process.ts', import.meta.url));

export interface ServiceChild {
  process: ChildProcess;
  port: number;
  url: string;
  grpcPort: number;
  grpcUrl: string;
  /** The exit signal or code. */
  exited: Promise<NodeJS.Signals | number | null>;
  /** Everything it wrote to stdout so far: `READY`, then its pino JSON lines. */
  output(): string;
  /** Its stdout lines that parse as JSON (the logs), optionally only those with this `msg`. */
  logs(msg?: string): Array<Record<string, any>>;
}

/** The cloud in a child process (see service-process.ts), resolved once it listens. */
export async function startServiceChild(env: Record<string, string>): Promise<ServiceChild> {
  const child = spawn(process.execPath, [SERVICE_SCRIPT], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)));
  let out = '';
  const [port, grpcPort] = await new Promise<[number, number]>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /READY (\d+) (\d+)/.exec(out);
      if (m) resolve([Number(m[1]), Number(m[2])]);
    });
    void exited.then((how) => reject(new Error(`service exited before it was ready (${how})`)));
  });
  const logs = (msg?: string) =>
    out
      .split('\n')
      // The last line may still be half written.
      .filter((line) => line.startsWith('{') && line.endsWith('}'))
      .map((line) => JSON.parse(line) as Record<string, any>)
      .filter((entry) => msg === undefined || entry.msg === msg);
  return { process: child, port, url: `http://127.0.0.1:${port}`, grpcPort, grpcUrl: `http://127.0.0.1:${grpcPort}`, exited, output: () => out, logs };
}
