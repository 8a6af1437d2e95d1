// Edge agent phase of `npm run bench:mavlink`: durable append rate of the real Spool, fed a capture's
// real frames the way the pipeline feeds it (agent-record v1 payloads through spool.append(), a burst
// per event-loop turn, group commit, an awaited flush every few MiB), against the baseline of one
// fsync per frame (appendDurable awaited frame by frame). Every rate counts only frames known to be
// on disk when the clock stops. The disk measured is the one under `parentDir`.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { parseCli } from '../src/config.ts';
import { AGENT_RECORD_MAX_BYTES, encodeAgentRecord } from '../src/record/agent-record.ts';
import { RECORD_HEADER_BYTES } from '../src/spool/record-format.ts';
import { Spool } from '../src/spool/spool.ts';

/** One captured frame and its receive time (cloud/src/telemetry/narrow/fixture-frames.ts gives these). */
export interface BenchFrame {
  readonly frame: { readonly bytes: Uint8Array; readonly sysid: number; readonly compid: number };
  readonly receivedUs: number;
}

/** The capture replayed end to end, over and over: replay r moves every receive time on by r spans. */
export interface Capture {
  readonly frames: readonly BenchFrame[];
  /** µs between the start of one replay and the next. */
  readonly replaySpanUs: number;
}

/** Bytes of frames a source hands the pipeline in one chunk: a file replay's read size. */
const CHUNK_BYTES = 64 * 1024;
/** The pipeline awaits spool.flush() after this much input (its flushEveryBytes default). */
const FLUSH_EVERY_BYTES = 4 * 1024 * 1024;
const MiB = 1024 * 1024;

export interface AgentSpoolSettings {
  readonly maxBytes: number;
  readonly segmentBytes: number;
  readonly fullPolicy: 'drop-oldest' | 'reject-new';
}

/**
 * The spool the agent opens for a live link with its default settings: maxBytes (1 GiB) and the live
 * policy (drop-oldest) from the agent's own CLI parser; segments sized as startAgent() sizes them.
 */
export function agentSpoolSettings(dir: string): AgentSpoolSettings {
  const parsed = parseCli(['--source', 'udp:14550', '--spool-dir', dir], {});
  if (parsed.help) throw new Error('unreachable: no --help given');
  const { maxBytes, fullPolicy } = parsed.config.spool;
  return { maxBytes, fullPolicy, segmentBytes: Math.max(64 * 1024, Math.min(16 * MiB, Math.floor(maxBytes / 8))) };
}

/**
 * Appends `count` frames of the capture from frame number `from` on (frame n is frame n mod length of
 * replay floor(n / length)), as the pipeline would: one agent record per frame, the bursts of a
 * 64 KiB chunk in one turn of the event loop, an awaited flush every 4 MiB. Stops early at `deadline`
 * (performance.now() ms). Returns the frames, their bytes, and the spool records' bytes (header, agent
 * record, frame) appended; not yet durable.
 */
export async function appendLikePipeline(
  spool: Spool,
  capture: Capture,
  from: number,
  count: number,
  deadline = Infinity,
): Promise<{ frames: number; bytes: number; recordBytes: number }> {
  const { frames, replaySpanUs } = capture;
  const scratch = new Uint8Array(AGENT_RECORD_MAX_BYTES);
  const meta = { sysid: 0, compid: 0, recordedTime: false, source: null };
  let n = 0;
  let bytes = 0;
  let recordBytes = 0;
  let unflushed = 0;
  while (n < count && performance.now() < deadline) {
    let chunk = 0;
    while (n < count && chunk < CHUNK_BYTES) {
      const index = (from + n) % frames.length;
      const replay = Math.floor((from + n) / frames.length);
      const f = frames[index]!;
      meta.sysid = f.frame.sysid;
      meta.compid = f.frame.compid;
      const length = encodeAgentRecord(scratch, f.frame.bytes, meta);
      spool.append(scratch.subarray(0, length), f.receivedUs + replay * replaySpanUs);
      chunk += f.frame.bytes.length;
      recordBytes += RECORD_HEADER_BYTES + length;
      n++;
    }
    bytes += chunk;
    unflushed += chunk;
    if (unflushed >= FLUSH_EVERY_BYTES) {
      unflushed = 0;
      await spool.flush();
    }
    await yieldToLoop();
  }
  return { frames: n, bytes, recordBytes };
}

export interface SpoolAppendResult {
  readonly dir: string;
  /** Filesystem type of the spool directory (a tmpfs would make fsync free). */
  readonly filesystem: string;
  readonly settings: AgentSpoolSettings;
  readonly groupCommit: {
    readonly frames: number;
    readonly seconds: number;
    readonly frameBytes: number;
    /** Spool records written (segment headers aside): what a frame costs on disk. */
    readonly recordBytes: number;
    readonly batches: number;
    readonly fsyncs: number;
    readonly dropped: number;
    /** CPU of this process per frame, µs. */
    readonly cpuUsPerFrame: number;
  };
  readonly perFrame: { readonly frames: number; readonly seconds: number; readonly fsyncs: number };
}

export async function spoolAppendPhase(capture: Capture, options: { seconds: number; baselineSeconds: number; parentDir: string }): Promise<SpoolAppendResult> {
  const settings = agentSpoolSettings(options.parentDir);
  const withSpool = async <T>(name: string, run: (spool: Spool) => Promise<T>): Promise<T> => {
    const dir = await mkdtemp(join(options.parentDir, `agent-spool-bench-${name}-`));
    const spool = await Spool.open({ dir, ...settings });
    try {
      return await run(spool);
    } finally {
      await spool.close();
      await rm(dir, { recursive: true, force: true });
    }
  };

  const groupCommit = await withSpool('group', async (spool) => {
    const cpu0 = process.cpuUsage();
    const started = performance.now();
    const appended = await appendLikePipeline(spool, capture, 0, Number.MAX_SAFE_INTEGER, started + options.seconds * 1000);
    await spool.flush();
    const seconds = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const st = spool.stats();
    if (st.flushed !== appended.frames) throw new Error(`spool append: ${appended.frames} frames appended but ${st.flushed} made durable`);
    return {
      frames: appended.frames,
      seconds,
      frameBytes: appended.bytes,
      recordBytes: appended.recordBytes,
      batches: st.batches,
      fsyncs: st.fsyncs,
      dropped: st.dropped,
      cpuUsPerFrame: (cpu.user + cpu.system) / appended.frames,
    };
  });

  const perFrame = await withSpool('fsync-each', async (spool) => {
    const { frames, replaySpanUs } = capture;
    const scratch = new Uint8Array(AGENT_RECORD_MAX_BYTES);
    const started = performance.now();
    const deadline = started + options.baselineSeconds * 1000;
    let n = 0;
    while (performance.now() < deadline) {
      const f = frames[n % frames.length]!;
      const length = encodeAgentRecord(scratch, f.frame.bytes, { sysid: f.frame.sysid, compid: f.frame.compid, recordedTime: false, source: null });
      await spool.appendDurable(scratch.subarray(0, length), f.receivedUs + Math.floor(n / frames.length) * replaySpanUs);
      n++;
    }
    const seconds = (performance.now() - started) / 1000;
    return { frames: n, seconds, fsyncs: spool.stats().fsyncs };
  });

  return {
    dir: options.parentDir,
    filesystem: filesystemOf(options.parentDir),
    settings,
    groupCommit,
    perFrame,
  };
}

/** The type of the filesystem holding `path`, from /proc/mounts (longest mount point that contains it). */
export function filesystemOf(path: string): string {
  try {
    let best = { mount: '', type: 'unknown' };
    for (const line of readFileSync('/proc/mounts', 'utf8').split('\n')) {
      const [, mount, type] = line.split(' ');
      if (!mount || !type) continue;
      const within = path === mount || path.startsWith(mount.endsWith('/') ? mount : `${mount}/`);
      if (within && mount.length > best.mount.length) best = { mount, type };
    }
    return `${best.type} on ${best.mount || dirname(path)}`;
  } catch {
    return 'unknown';
  }
}
