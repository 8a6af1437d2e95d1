/**
 * The dispatch floor for bench:dispatch's latency phase, and fanned out for its throughput phase (where
 * runDeliveryFloor delivers what it publishes): dispatch-floor-service.ts in a process of its own, over copies of the commands, delivery_jobs and delivery_attempts tables (their indexes, no
 * foreign keys), holding copies of the commands it is to dispatch. The bench drives it at the same
 * rate as the cloud and reads every party's CPU around it, so the cloud's CPU per dispatch has a
 * same-run floor: what this machine, today, charges for the least any dispatch service does.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import type { Db } from '../src/db/connect.ts';
import { startFlags } from './bench-env.ts';

const SERVICE = fileURLToPath(new URL('./dispatch-floor-service.ts', import.meta.url));

export interface DispatchFloor {
  port: number;
  pid: number;
  close(): Promise<void>;
}

export async function startDispatchFloor(o: {
  db: Db;
  databaseUrl: string;
  receiverUrl: string;
  caFile: string;
  organizationId: string;
  /** Logged commands (in `commands`) whose copies the floor dispatches. */
  commandIds: string[];
  /**
   * Fanned out: each dispatch writes an outbox row per endpoint and publishes them to `subject`, for
   * runDeliveryFloor to deliver (which then owns floor_jobs and floor_attempts), instead of POSTing.
   */
  fanOut?: { endpointIds: string[]; natsUrl: string; subject: string };
}): Promise<DispatchFloor> {
  await sql`create table floor_commands (like commands including all)`.execute(o.db);
  await sql`create table if not exists floor_jobs (like delivery_jobs including all)`.execute(o.db);
  await sql`create table if not exists floor_attempts (like delivery_attempts including all)`.execute(o.db);
  await sql`insert into floor_commands select * from commands where id = any(${o.commandIds}::uuid[])`.execute(o.db);
  const child = spawn(process.execPath, [...startFlags(), SERVICE], {
    env: {
      ...process.env,
      FLOOR_DATABASE_URL: o.databaseUrl,
      FLOOR_RECEIVER_URL: o.receiverUrl,
      FLOOR_CA_FILE: o.caFile,
      FLOOR_ORG: o.organizationId,
      ...(o.fanOut && { FLOOR_ENDPOINTS: o.fanOut.endpointIds.join(','), FLOOR_NATS_URL: o.fanOut.natsUrl, FLOOR_SUBJECT: o.fanOut.subject }),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /READY (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    void exited.then(() => reject(new Error('the dispatch floor exited before it listened')));
  });
  return {
    port,
    pid: child.pid!,
    async close() {
      child.kill('SIGTERM');
      await exited;
      await sql`drop table if exists floor_attempts, floor_jobs, floor_commands`.execute(o.db);
    },
  };
}
