// Edge agent phase of `npm run bench:mavlink`: catch-up after a cloud outage. The agent's real gRPC
// uplink (configured by the agent's own CLI parser, so its defaults for session size, batch size and
// sessions in flight) runs against a cloud that is not there: it fails and backs off while the spool
// fills with `replays` replays of the capture (new seqs, so new frame_seqs). Then the caller brings
// the cloud up and the clock runs until the spool's acked seq reaches its last seq.
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pino } from 'pino';
import { parseCli } from '../src/config.ts';
import type { CloudConfig } from '../src/config.ts';
import { LINK_EVENTS_FILE, LinkEventQueue } from '../src/link/link-event-queue.ts';
import { Spool } from '../src/spool/spool.ts';
import { GRPC_UPLINK_DEFAULTS, GrpcUplink } from '../src/uplink/grpc-uplink.ts';
import { agentSpoolSettings, appendLikePipeline } from './spool-append.ts';
import type { Capture } from './spool-append.ts';

export interface CatchUpCloud {
  readonly httpUrl: string;
  readonly grpcUrl: string;
  readonly apiKey: string;
  readonly experimentId: string;
}

export interface CatchUpResult {
  readonly frames: number;
  readonly systems: readonly number[];
  readonly config: { readonly cloud: CloudConfig; readonly uplink: typeof GRPC_UPLINK_DEFAULTS };
  /** Filling the spool during the outage (group commit, as the pipeline appends). */
  readonly fillSeconds: number;
  /** Failed attempts of the uplink while the cloud was away. */
  readonly failuresDuringOutage: number;
  /** From the cloud listening again to the uplink's first frame sent (back-off wait, dataset registration). */
  readonly reconnectSeconds: number;
  /** From the first frame sent to the last frame acknowledged. */
  readonly catchUpSeconds: number;
  readonly counters: ReturnType<GrpcUplink['counters']>;
}

export async function catchUpPhase(
  capture: Capture,
  options: {
    readonly replays: number;
    readonly parentDir: string;
    /** Where the cloud will be: nothing may listen there until bringCloudUp(). */
    readonly cloud: CatchUpCloud;
    readonly bringCloudUp: () => Promise<void>;
    /** The longest wait between reconnection attempts, s (the agent's --retry-max-seconds). */
    readonly retryMaxSeconds: number;
    readonly timeoutSeconds: number;
    readonly logLevel: string;
  },
): Promise<CatchUpResult> {
  const dir = await mkdtemp(join(options.parentDir, 'agent-catchup-bench-'));
  const { cloud } = options;
  const parsed = parseCli(
    [
      '--source', 'udp:14550',
      '--spool-dir', dir,
      '--cloud', cloud.httpUrl,
      '--grpc', cloud.grpcUrl,
      '--experiment', cloud.experimentId,
      '--sortie', 'catch-up',
      '--retry-max-seconds', String(options.retryMaxSeconds),
    ],
    { SORTIE_AGENT_API_KEY: cloud.apiKey },
  );
  if (parsed.help || !parsed.config.cloud) throw new Error('unreachable: the bench configures a cloud');
  const cloudConfig = parsed.config.cloud;
  const logger = pino({ level: options.logLevel, base: { component: 'bench-agent' } }, pino.destination({ fd: 2, sync: true }));

  const spool = await Spool.open({ dir, ...agentSpoolSettings(dir) });
  const linkEvents = await LinkEventQueue.open(join(dir, LINK_EVENTS_FILE));
  const uplink = new GrpcUplink(cloudConfig);
  const total = options.replays * capture.frames.length;
  const systems = [...new Set(capture.frames.map((f) => f.frame.sysid))].sort((a, b) => a - b);
  try {
    uplink.start({ spool, linkEvents, systems: { list: () => systems, onSystem: () => () => {} }, logger });

    const fillStarted = performance.now();
    const filled = await appendLikePipeline(spool, capture, 0, total);
    await spool.flush();
    const fillSeconds = (performance.now() - fillStarted) / 1000;
    if (filled.frames !== total || spool.nextSeq - 1n !== BigInt(total)) throw new Error(`catch-up: spooled ${filled.frames} of ${total} frames`);
    // The outage must have been seen: at least one attempt failed, nothing was acknowledged.
    while (uplink.counters().failures === 0) await new Promise((r) => setTimeout(r, 10));
    if (spool.ackedSeq !== 0n) throw new Error(`catch-up: frames were acknowledged during the outage (acked seq ${spool.ackedSeq})`);
    const failuresDuringOutage = uplink.counters().failures;

    await options.bringCloudUp();
    const upAt = performance.now();
    let firstSentAt = 0;
    const watch = setInterval(() => {
      if (uplink.counters().sent > 0) {
        firstSentAt = performance.now();
        clearInterval(watch);
      }
    }, 1);
    const timeout = AbortSignal.timeout(options.timeoutSeconds * 1000);
    try {
      await uplink.drain(timeout);
    } finally {
      clearInterval(watch);
    }
    const doneAt = performance.now();
    if (spool.ackedSeq !== BigInt(total)) {
      throw new Error(`catch-up: after ${options.timeoutSeconds} s the cloud had acknowledged ${spool.ackedSeq} of ${total} frames (uplink ${JSON.stringify(uplink.status())})`);
    }
    const counters = uplink.counters();
    return {
      frames: total,
      systems,
      config: { cloud: { ...cloudConfig, apiKey: '[redacted]' }, uplink: GRPC_UPLINK_DEFAULTS },
      fillSeconds,
      failuresDuringOutage,
      reconnectSeconds: (firstSentAt - upAt) / 1000,
      catchUpSeconds: (doneAt - firstSentAt) / 1000,
      counters,
    };
  } finally {
    await uplink.stop();
    await linkEvents.close();
    await spool.close();
    await rm(dir, { recursive: true, force: true });
  }
}
