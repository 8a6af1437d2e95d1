import { readdirSync, readFileSync } from 'node:fs';

/**
 * CPU time PostgreSQL spent over a bench phase, with backends that start or exit during it counted.
 *
 * Reading /proc only at a phase's two ends misses a backend that exits in between (node-postgres closes
 * a connection idle for 10 s, so a pool shrinks in a quiet phase): its CPU drops out of the second sum
 * and the phase can come out negative. So the meter samples the postmaster's children every
 * `intervalMs` and keeps, per backend (pid and start time, so a reused pid is another backend), the
 * CPU it used since the phase began — since it started, if it started later — as last seen. A backend
 * that exits loses only what it used after its last sample; one closed for being idle used nothing.
 *
 * Two figures:
 * - `database`: the backends whose title names the database (its connections, autovacuum on it);
 * - `all`: every PostgreSQL process — every database, the WAL writer, the checkpointer — and the
 *   children the postmaster reaped meanwhile (its cutime + cstime, exact for exited ones). On a quiet
 *   machine that is everything the phase cost PostgreSQL; on a shared one it includes others' work.
 */

const TICK_MS = 10; // USER_HZ is 100 on Linux

interface ProcStat {
  /** user + system CPU, ms */
  cpuMs: number;
  /** CPU of the children it reaped (cutime + cstime), ms */
  childrenMs: number;
  /** start time, clock ticks since boot */
  startTicks: number;
}

function readStat(pid: number | string): ProcStat | undefined {
  try {
    // The fields after the command name: index 0 is field 3 (state) of proc(5).
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return {
      cpuMs: (Number(fields[11]) + Number(fields[12])) * TICK_MS,
      childrenMs: (Number(fields[13]) + Number(fields[14])) * TICK_MS,
      startTicks: Number(fields[19]),
    };
  } catch {
    return undefined; // ended while we looked
  }
}

function read(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

/** The postmaster: the PostgreSQL server process (its children are the backends and helpers). */
function findPostmaster(): number {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const argv = read(`/proc/${entry}/cmdline`).split('\0');
    if (/(^|\/)postgres$/.test(argv[0]!) && argv.includes('-D')) return Number(entry);
  }
  throw new Error('no PostgreSQL postmaster on this machine (is the database remote?)');
}

function uptimeTicks(): number {
  return Number(read('/proc/uptime').split(' ')[0]) * (1000 / TICK_MS);
}

export interface PostgresCpu {
  /** This database's backends (its connections, autovacuum on it), ms. */
  database: number;
  /** Every PostgreSQL process, children reaped during the phase included, ms. */
  all: number;
}

export class PostgresCpuMeter {
  readonly #database: string;
  readonly #intervalMs: number;
  readonly #postmaster = findPostmaster();
  #startTicks = 0;
  /** `pid@startTicks` → CPU at the phase's start (0 for a backend started since) and as last seen; null: not ours. */
  #backends = new Map<string, { base: number; last: number } | null>();
  #allAtStart = 0;
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(database: string, intervalMs = 500) {
    this.#database = database;
    this.#intervalMs = intervalMs;
  }

  #children(): string[] {
    return read(`/proc/${this.#postmaster}/task/${this.#postmaster}/children`).split(' ').filter((s) => s !== '');
  }

  #isOurs(pid: string): boolean {
    // "postgres: [cluster: ]<user> <database> <client> <state>" or "postgres: [cluster: ]autovacuum worker <database>".
    const line = read(`/proc/${pid}/cmdline`).replace(/\0/g, ' ');
    return line.includes(` ${this.#database} `) || line.trimEnd().endsWith(` ${this.#database}`);
  }

  #sample(): void {
    for (const pid of this.#children()) {
      const stat = readStat(pid);
      if (!stat) continue;
      const key = `${pid}@${stat.startTicks}`;
      let entry = this.#backends.get(key);
      if (entry === undefined) {
        entry = this.#isOurs(pid) ? { base: stat.startTicks < this.#startTicks ? stat.cpuMs : 0, last: stat.cpuMs } : null;
        this.#backends.set(key, entry);
      }
      if (entry) entry.last = stat.cpuMs;
    }
  }

  #allNow(): number {
    const master = readStat(this.#postmaster);
    let total = (master?.cpuMs ?? 0) + (master?.childrenMs ?? 0);
    for (const pid of this.#children()) total += readStat(pid)?.cpuMs ?? 0;
    return total;
  }

  start(): void {
    this.#startTicks = uptimeTicks();
    this.#backends.clear();
    this.#allAtStart = this.#allNow();
    this.#sample();
    this.#timer = setInterval(() => this.#sample(), this.#intervalMs);
    this.#timer.unref();
  }

  /** Ends the phase: CPU ms of this database's backends and of all of PostgreSQL since start(). */
  stop(): PostgresCpu {
    clearInterval(this.#timer);
    this.#sample();
    let database = 0;
    for (const b of this.#backends.values()) if (b) database += b.last - b.base;
    return { database, all: this.#allNow() - this.#allAtStart };
  }
}
