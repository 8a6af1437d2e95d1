import { MavlinkFramer, TlogWalker, type MavlinkFrame } from '@sortie/contracts';
import { crcExtraOf } from '@sortie/contracts/mavlink';
import { mavlinkMessageName, type NarrowRowWriter } from '../telemetry/log-import.ts';
import type { ImportFindings, ImportProgressSink } from './findings.ts';
import { readFileInChunks } from './read-file.ts';
import { LOG_BATCH_ROWS, writeBehind } from './log-file.ts';

const HEARTBEAT = 0;
const MAV_AUTOPILOT_INVALID = 8;
const MAV_TYPE_GCS = 6;

interface FileRecord {
  frame: MavlinkFrame;
  /** The tlog's receive time, µs; undefined for a raw capture. */
  receivedUs: number | undefined;
}

function walker(format: 'tlog' | 'mavlink'): { push(chunk: Uint8Array): FileRecord[]; end(): FileRecord[]; stats: { bytesDiscarded: number; crcFailures: number } } {
  if (format === 'tlog') {
    const w = new TlogWalker({ crcExtra: crcExtraOf });
    const map = (records: ReturnType<TlogWalker['push']>) => records.map((r) => ({ frame: r.frame, receivedUs: Number(r.timestampUs) }));
    return { push: (c) => map(w.push(c)), end: () => map(w.end()), stats: w.stats };
  }
  const w = new MavlinkFramer({ crcExtra: crcExtraOf });
  const map = (frames: MavlinkFrame[]) => frames.map((frame) => ({ frame, receivedUs: undefined }));
  return { push: (c) => map(w.push(c)), end: () => map(w.end()), stats: w.stats };
}

/**
 * The system id a MAVLink file's flight is of: the first HEARTBEAT from a vehicle (an autopilot that is
 * not a ground station), else the system id of the first frame. A tlog also holds the ground station's
 * own frames (system 255 for Mission Planner and MAVProxy); a narrow dataset holds one system.
 */
export async function findVehicleSystem(path: string, format: 'tlog' | 'mavlink'): Promise<number | undefined> {
  const w = walker(format);
  let first: number | undefined;
  let found: number | undefined;
  class Stop extends Error {}
  const look = (records: FileRecord[]) => {
    for (const { frame } of records) {
      first ??= frame.sysid;
      const p = frame.payload;
      if (frame.msgid === HEARTBEAT && p.length >= 6 && p[5] !== MAV_AUTOPILOT_INVALID && p[4] !== MAV_TYPE_GCS) {
        found = frame.sysid;
        throw new Stop();
      }
    }
  };
  try {
    await readFileInChunks(path, (chunk) => look(w.push(chunk)));
    look(w.end());
  } catch (error) {
    if (!(error instanceof Stop)) throw error;
  }
  return found ?? first;
}

/**
 * Store a tlog or raw MAVLink capture the way the agent's stream is stored: every frame of the
 * vehicle's system decoded into its message's table by the stream's writer (same decoding, boot
 * sessions and clocks), frame_seq its position among the file's frames, so importing the same file
 * again into the dataset stores each frame once. A tlog's timestamps are the frames' receive times;
 * a raw capture has none, so its frames are received "now" and placed by their own clocks (boot time,
 * SYSTEM_TIME's GPS time).
 */
export async function importMavlinkFile(options: {
  path: string;
  format: 'tlog' | 'mavlink';
  sysid: number;
  writer: NarrowRowWriter;
  nowUs: number;
  findings: ImportFindings;
  progress?: ImportProgressSink;
}): Promise<void> {
  const { writer, findings, sysid, nowUs } = options;
  const w = walker(options.format);
  let frameSeq = 0;
  let others = 0;
  let bytesRead = 0;
  const locate = (index: number) => `frame ${index}`;
  const take = (records: FileRecord[]) => {
    for (const { frame, receivedUs } of records) {
      frameSeq++;
      if (frame.sysid !== sysid) {
        others++;
        continue;
      }
      const bytes = frame.bytes;
      writer.batch.addAt(bytes, 0, bytes.length, receivedUs ?? NaN, frameSeq, nowUs, locate, frameSeq);
      findings.countLabel(mavlinkMessageName(frame.msgid), receivedUs ?? nowUs);
    }
  };
  const flush = writeBehind(writer);
  await readFileInChunks(
    options.path,
    (chunk) => {
      bytesRead += chunk.length;
      take(w.push(chunk));
    },
    async () => {
      options.progress?.(bytesRead, findings.messages);
      if (writer.staged >= LOG_BATCH_ROWS) await flush();
    },
    { freshBuffers: true },
  );
  take(w.end());
  if (writer.staged > 0) await flush();
  await flush.settled();
  if (others > 0) findings.warn(`${others} frames of other MAVLink systems (a ground station's own, another vehicle's) were left out: this flight is system ${sysid}`);
  if (w.stats.bytesDiscarded > 0) {
    findings.skippedBytes += w.stats.bytesDiscarded;
    findings.warn(`skipped ${w.stats.bytesDiscarded} bytes that were not MAVLink frames (junk, ${w.stats.crcFailures} CRC failures, a truncated tail)`);
  }
}
