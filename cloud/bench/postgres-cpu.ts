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

/** What findPostmaster reads of /proc (a parameter so a test can give it a machine of its own). */
export interface ProcReader {
  pids(): string[];
  read(path: string): string;
}

const procfs: ProcReader = {
  pids: () => readdirSync('/proc').filter((entry) => /^\d+$/.test(entry)),
  read,
};

/**
 * The postmaster serving `database`: the PostgreSQL server process whose children are its backends. A
 * machine may run more than one cluster (CI leaves a TimescaleDB cluster on port 5433), and /proc lists
 * pids as text ("18948" before "2241"), so the first postmaster found may be the wrong one; the one with a
 * backend of the database is taken, else the first.
 */
export function findPostmaster(database: string, proc: ProcReader = procfs): number {
  const postmasters = proc.pids().filter((pid) => {
    const argv = proc.read(`/proc/${pid}/cmdline`).split('\0');
    return /(^|\/)postgres$/.test(argv[0]!) && argv.includes('-D');
  });
  if (postmasters.length === 0) throw new Error('no PostgreSQL postmaster on this machine (is the database remote?)');
  const serving = postmasters.find((pid) =>
    proc
      .read(`/proc/${pid}/task/${pid}/children`)
      .split(' ')
      .some((child) => child !== '' && namesDatabase(proc.read(`/proc/${child}/cmdline`), database)),
  );
  return Number(serving ?? postmasters[0]);
}

/** Whether a backend's title names `database`: "postgres: [cluster: ]<user> <database> <client> <state>" or "… autovacuum worker <database>". */
function namesDatabase(cmdline: string, database: string): boolean {
  const line = cmdline.replace(/\0/g, ' ');
  return line.includes(` ${database} `) || line.trimEnd().endsWith(` ${database}`);
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
  readonly #postmaster: number;
  #startTicks = 0;
  /** `pid@startTicks` → CPU at the phase's start (0 for a backend started since) and as last seen; null: not ours. */
  #backends = new Map<string, { base: number; last: number } | null>();
  #allAtStart = 0;
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(database: string, intervalMs = 500) {
    this.#database = database;
    this.#postmaster = findPostmaster(database);
    this.#intervalMs = intervalMs;
  }

  #children(): string[] {
    return read(`/proc/${this.#postmaster}/task/${this.#postmaster}/children`).split(' ').filter((s) => s !== '');
  }

  #isOurs(pid: string): boolean {
    return namesDatabase(read(`/proc/${pid}/cmdline`), this.#database);
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
