// The agent put together: spool, link events, source, pipeline, uplink, status, and an orderly end.
// A run ends at the end of a replayed file, on stop() (SIGINT/SIGTERM), or on a fatal error; in every
// case the source is closed, the spool is made durable and closed, and a replay's checkpoint written.
import { join } from 'node:path';
import { crcExtraOf } from '@sortie/contracts/mavlink';
import type { Logger } from 'pino';
import type { AgentConfig, SourceSpec } from './config.ts';
import { LINK_EVENTS_FILE, LinkEventQueue } from './link/link-event-queue.ts';
import { LinkLossDetector } from './link/link-loss-detector.ts';
import type { LinkEvent } from './link/link-loss-detector.ts';
import { Pipeline } from './pipeline/pipeline.ts';
import { ReplayCheckpointStore, ReplayCheckpointer, findResumePoint, fingerprintFile } from './replay/replay-checkpoint.ts';
import type { FileFingerprint } from './replay/replay-checkpoint.ts';
import { FileReplaySource } from './sources/file-replay.ts';
import { SerialSource } from './sources/serial-source.ts';
import type { Source } from './sources/source.ts';
import { UdpSource } from './sources/udp-source.ts';
import { Spool } from './spool/spool.ts';
import type { SpoolWarning } from './spool/spool.ts';
import { StatusReporter } from './status/status-reporter.ts';
import type { StatusOutput } from './status/status-reporter.ts';
import { createUplink } from './uplink/create-uplink.ts';
import type { SystemIds, Uplink } from './uplink/uplink.ts';

export interface AgentIo {
  readonly logger: Logger;
  /** stdout when it is a terminal (the status line is drawn on it), else null. */
  readonly tty: StatusOutput | null;
  /** Handed the status reporter once it exists (the terminal logger erases its line). */
  readonly onReporter?: (reporter: StatusReporter) => void;
}

export interface AgentRun {
  /** Process exit code: 0 after a clean end (replay finished, or stopped), 1 after a failure. */
  readonly done: Promise<number>;
  /** Stops the source and shuts down in order; further calls are ignored. */
  stop(reason: string): void;
}

interface Replay {
  readonly file: FileFingerprint & { path: string };
  readonly checkpointer: ReplayCheckpointer;
}

/** What a run holds while its source is read: everything the orderly end has to stop and close. */
interface Running {
  readonly logger: Logger;
  readonly spool: Spool;
  readonly linkEvents: LinkEventQueue;
  readonly source: Source;
  readonly replay: Replay | null;
  readonly pipeline: Pipeline;
  readonly uplink: Uplink;
  readonly reporter: StatusReporter;
  /** Link events being written to the queue (on disk before the drain looks at what is pending). */
  readonly eventWrites: ReadonlySet<Promise<unknown>>;
}

/**
 * Opens everything and starts the run. Fails before anything runs (rejecting) when the spool is
 * locked by another agent, the file cannot be read, the UDP port is taken or no uplink can be made.
 */
export async function startAgent(config: AgentConfig, io: AgentIo): Promise<AgentRun> {
  const { logger } = io;
  const uplink = createUplink(config.cloud);
  const spool = await openSpool(config);
  let events: LinkEventQueue | null = null;
  let source: Source | null = null;
  try {
    logRecovery(spool, logger);
    events = await openLinkEvents(config, logger);

    let pipeline: Pipeline | null = null;
    const opened = await openSource(config, spool, logger, () => pipeline?.lastSpooled ?? null);
    if (opened === 'nothing-to-do') return await nothingToReplay(spool, events, uplink, logger);
    source = opened.source;
    const { replay } = opened;
    const linkEvents = events;

    pipeline = createPipeline(config, opened, spool, uplink, logger);
    const { eventWrites, systems } = followPipeline(pipeline, linkEvents, logger);
    logSpoolTrouble(spool, logger);
    const reporter = startStatus(config, io, opened.source, pipeline, spool, uplink);
    uplink.start({ spool, linkEvents, systems, logger: logger.child({ component: 'uplink' }) });
    return runToTheEnd({ logger, spool, linkEvents, source: opened.source, replay, pipeline, uplink, reporter, eventWrites });
  } catch (error) {
    await source?.close().catch(() => {});
    await events?.close().catch(() => {});
    await spool.close().catch(() => {});
    throw error;
  }
}

function openSpool(config: AgentConfig): Promise<Spool> {
  return Spool.open({
    dir: config.spool.dir,
    maxBytes: config.spool.maxBytes,
    // Eight segments or more per spool, so a small bound (an SD card) still drops or frees in steps.
    segmentBytes: Math.max(64 * 1024, Math.min(16 * 1024 * 1024, Math.floor(config.spool.maxBytes / 8))),
    fullPolicy: config.spool.fullPolicy,
  });
}

async function openLinkEvents(config: AgentConfig, logger: Logger): Promise<LinkEventQueue> {
  const events = await LinkEventQueue.open(join(config.spool.dir, LINK_EVENTS_FILE));
  if (events.pending().length > 0) logger.info({ pending: events.pending().length }, 'link events from earlier runs wait for the uplink');
  return events;
}

/**
 * The replay is spooled already; what the cloud has not acknowledged (a run stopped or killed while
 * sending) still goes. Otherwise the run is over before it started.
 */
async function nothingToReplay(spool: Spool, events: LinkEventQueue, uplink: Uplink, logger: Logger): Promise<AgentRun> {
  if (uplink.status().state !== 'off' && !allAcknowledged(spool, events)) return drainOnly(spool, events, uplink, logger);
  await events.close();
  await spool.close();
  return { done: Promise.resolve(0), stop() {} };
}

function createPipeline(
  config: AgentConfig,
  opened: { source: Source; replay: Replay | null },
  spool: Spool,
  uplink: Uplink,
  logger: Logger,
): Pipeline {
  let fullRetries = 0;
  return new Pipeline({
    source: opened.source,
    spool,
    detector: new LinkLossDetector({ thresholdUs: config.linkLossSeconds * 1e6 }),
    crcExtra: crcExtraOf,
    fileTag: opened.replay?.file.fileTag,
    waitWhenFull: config.source.kind === 'file',
    onSpoolFull: (error) => {
      // Without an uplink nothing will ever free room: stop rather than hang.
      if (uplink.status().state === 'off') return false;
      // Asked on every retry (5 a second): say it once a minute.
      if (fullRetries++ % 300 === 0) logger.warn({ error: error.message }, 'spool full: replay paused until the uplink frees room');
      return true;
    },
  });
}

/**
 * What the pipeline reports, acted on: link events queued for the uplink (the writes under way are
 * returned, for the end of the run to wait for), system ids collected for the uplink, frames that
 * could not be spooled logged.
 */
function followPipeline(p: Pipeline, linkEvents: LinkEventQueue, logger: Logger): { eventWrites: ReadonlySet<Promise<unknown>>; systems: SystemIds } {
  const eventWrites = new Set<Promise<unknown>>();
  p.on('link', (e) => {
    const write = linkEvents.push(e).catch((error: unknown) => logger.error({ error: String(error), event: e }, 'could not queue a link event'));
    eventWrites.add(write);
    void write.finally(() => eventWrites.delete(write));
    logLinkEvent(logger, e);
  });
  const seen = new Set<number>();
  p.on('system', (sysid) => {
    seen.add(sysid);
    logger.info({ sysid }, 'new system id on the link');
  });
  let dropped = 0;
  p.on('dropped', (error) => {
    // The first, then one line per thousand: a full spool on a live link drops at the frame rate.
    if (dropped++ % 1000 === 0) logger.warn({ error: error.message, droppedSoFar: dropped }, 'frame not spooled');
  });
  const systems: SystemIds = {
    list: () => [...seen].sort((a, b) => a - b),
    onSystem(listener) {
      p.on('system', listener);
      return () => p.off('system', listener);
    },
  };
  return { eventWrites, systems };
}

function logSpoolTrouble(spool: Spool, logger: Logger): void {
  spool.on('warning', (w) => logger.warn(warningFields(w), 'spool warning'));
  spool.on('error', (error) => logger.error({ error: error.message }, 'spool failed'));
}

/** The status line (or JSON status records), handed to io, announced with the start of the run. */
function startStatus(config: AgentConfig, io: AgentIo, src: Source, p: Pipeline, spool: Spool, uplink: Uplink): StatusReporter {
  const { logger } = io;
  const reporter = new StatusReporter({
    tty: io.tty,
    logger,
    jsonIntervalMs: config.statusIntervalSeconds * 1000,
    snapshot: () => {
      const progress = src.progress();
      return {
        source: { description: src.description, state: src.state() },
        progress: progress ? { ...progress, etaSeconds: null } : null,
        stats: p.stats(),
        uplink: uplink.status(),
        nowUs: src.now(),
      };
    },
  });
  io.onReporter?.(reporter);

  logger.info(
    { source: src.description, sourceState: src.state(), spoolDir: config.spool.dir, nextSeq: String(spool.nextSeq), uplink: uplink.status().state },
    'agent started',
  );
  reporter.start();
  return reporter;
}

/**
 * Runs the pipeline until the source ends, stop() is called or something fails, then shuts down in
 * order: source, replay checkpoint, queued link events, the drain of a finished replay, uplink,
 * status, and last the event queue and the spool.
 */
function runToTheEnd(run: Running): AgentRun {
  const { logger, pipeline: p, source: src } = run;
  const abort = new AbortController();
  const startedMs = performance.now();
  const done = (async (): Promise<number> => {
    let code = 0;
    try {
      await p.run();
    } catch (error) {
      code = 1;
      logger.error({ error: (error as Error).message }, fatalHint(error));
    }
    await src.close().catch(() => {});
    const finished = src.ended() && code === 0;
    if (!(await stopSending(run, finished, abort.signal))) code = 1;
    run.reporter.stop();
    logRunSummary(logger, p, startedMs, finished);
    return (await closeStorage(run.linkEvents, run.spool, logger)) ? code : 1;
  })();

  let stopping = false;
  return {
    done,
    stop(reason) {
      if (stopping) return;
      stopping = true;
      logger.info({ reason }, 'stopping: closing the source and flushing the spool');
      abort.abort();
      void p.stop();
    },
  };
}

/**
 * The steps between the end of the source and closing the storage: the replay's checkpoint, the
 * link events still being queued, the drain of a finished replay (until the cloud has acknowledged
 * everything, or stop() aborts it), and the uplink. false (and logged) when one failed.
 */
async function stopSending(run: Running, finished: boolean, signal: AbortSignal): Promise<boolean> {
  const { logger, spool, linkEvents, replay, uplink } = run;
  try {
    await replay?.checkpointer.finish(finished);
    // Link events are on disk before the drain looks at what is pending.
    await Promise.allSettled(run.eventWrites);
    if (finished && replay && uplink.status().state !== 'off') {
      const lag = spool.stats().pending;
      if (lag > 0) logger.info({ unacknowledged: lag }, 'replay spooled; waiting for the cloud to acknowledge the rest');
      await uplink.drain(signal);
      if (allAcknowledged(spool, linkEvents)) logger.info({ ackedSeq: String(spool.ackedSeq) }, 'the cloud has acknowledged every frame and link event');
    }
    await uplink.stop();
    return true;
  } catch (error) {
    logger.error({ error: (error as Error).message }, 'shutdown step failed');
    return false;
  }
}

function logRunSummary(logger: Logger, p: Pipeline, startedMs: number, finished: boolean): void {
  const s = p.stats();
  logger.info(
    {
      framesIn: s.framesIn,
      spooled: s.spooled,
      notSpooled: s.notSpooled,
      junkBytes: s.junkBytes,
      unknownIds: s.unknownIds,
      linkEvents: s.linkEvents,
      durableSeq: String(s.durableSeq),
      seconds: Math.round(performance.now() - startedMs) / 1000,
    },
    finished ? 'replay finished' : 'stopped',
  );
}

async function openSource(
  config: AgentConfig,
  spool: Spool,
  logger: Logger,
  lastSpooled: () => { seq: bigint; position: number } | null,
): Promise<{ source: Source; replay: Replay | null } | 'nothing-to-do'> {
  const spec: SourceSpec = config.source;
  if (spec.kind === 'serial') {
    const source = new SerialSource({
      path: spec.path,
      baudRate: spec.baudRate,
      onState: (state) => logger.info({ state }, `serial ${spec.path}`),
    });
    await source.open();
    return { source, replay: null };
  }
  if (spec.kind === 'udp') {
    const source = new UdpSource({ host: spec.host, port: spec.port });
    await source.open();
    return { source, replay: null };
  }
  const file = { ...(await fingerprintFile(spec.path)), path: spec.path };
  const store = await ReplayCheckpointStore.open(config.spool.dir);
  const resume = config.replayAgain
    ? ({ position: 0, done: false, from: 'start' } as const)
    : await findResumePoint(spool, store.get(file.fingerprint), file.fileTag);
  if (resume.done) {
    logger.info({ file: spec.path }, 'this spool already holds the whole replay of this file: nothing to do (--replay-again replays it again)');
    return 'nothing-to-do';
  }
  if (resume.position > 0) {
    logger.info({ file: spec.path, position: resume.position, size: file.size, from: resume.from }, 'resuming an interrupted replay');
  }
  const source = new FileReplaySource({
    path: spec.path,
    format: spec.format,
    speed: config.speed,
    byteRate: config.byteRate,
    startAt: resume.position,
    crcExtra: crcExtraOf,
    // A resumed raw capture keeps the clock its first run started (the checkpoint holds it).
    originUs: resume.position > 0 ? store.get(file.fingerprint)?.originUs : undefined,
  });
  await source.open();
  // What the flight's times will be, said before the first frame: a capture without timestamps is
  // dated by the agent, and whoever reads the flight later should know how.
  const timeBase = source.timeBase;
  logger.info(
    { file: spec.path, timeBase: timeBase.kind, ...(timeBase.originUs !== undefined && { origin: new Date(timeBase.originUs / 1000).toISOString() }) },
    `time base: ${timeBase.description}`,
  );
  const checkpointer = new ReplayCheckpointer({ store, file, spool, lastSpooled, originUs: timeBase.originUs });
  await checkpointer.begin(resume.position);
  return { source, replay: { file, checkpointer } };
}

/** The last step of a run: false (and logged) when the event queue or the spool could not be closed. */
async function closeStorage(events: LinkEventQueue, spool: Spool, logger: Logger): Promise<boolean> {
  try {
    await events.close();
    await spool.close();
    return true;
  } catch (error) {
    logger.error({ error: (error as Error).message }, 'closing the spool failed');
    return false;
  }
}

function allAcknowledged(spool: Spool, events: LinkEventQueue): boolean {
  return spool.ackedSeq >= spool.nextSeq - 1n && events.pending().length === 0;
}

/** No source to read: only send what the spool and the event queue still hold, then end. */
function drainOnly(spool: Spool, events: LinkEventQueue, uplink: Uplink, logger: Logger): AgentRun {
  const abort = new AbortController();
  logger.info(
    { unacknowledged: spool.stats().pending, pendingLinkEvents: events.pending().length },
    'sending what the cloud has not acknowledged yet',
  );
  uplink.start({ spool, linkEvents: events, systems: { list: () => [], onSystem: () => () => {} }, logger: logger.child({ component: 'uplink' }) });
  const done = (async (): Promise<number> => {
    let code = 0;
    try {
      await uplink.drain(abort.signal);
      await uplink.stop();
      if (allAcknowledged(spool, events)) logger.info({ ackedSeq: String(spool.ackedSeq) }, 'the cloud has acknowledged every frame and link event');
      else logger.info({ unacknowledged: spool.stats().pending }, 'stopped; the rest is sent by the next run');
    } catch (error) {
      code = 1;
      logger.error({ error: (error as Error).message }, 'shutdown step failed');
    }
    return (await closeStorage(events, spool, logger)) ? code : 1;
  })();
  return {
    done,
    stop(reason) {
      if (abort.signal.aborted) return;
      logger.info({ reason }, 'stopping');
      abort.abort();
    },
  };
}

function logRecovery(spool: Spool, logger: Logger): void {
  const r = spool.recovery;
  const fields = {
    records: r.records,
    nextSeq: String(r.nextSeq),
    ackedSeq: String(r.ackedSeq),
    truncatedBytes: r.truncatedBytes,
    corruptRecords: r.corruptRecords,
    removedFiles: r.removedFiles,
    quarantinedFiles: r.quarantinedFiles,
  };
  if (r.corruptRecords > 0 || r.quarantinedFiles.length > 0) logger.warn(fields, 'spool recovered with damage');
  else if (r.truncatedBytes > 0 || r.removedFiles.length > 0) logger.info(fields, 'spool recovered a torn tail (the last run did not stop cleanly)');
  else logger.debug(fields, 'spool opened');
}

function logLinkEvent(logger: Logger, e: LinkEvent): void {
  const at = (us: number): string => new Date(us / 1000).toISOString();
  if (e.type === 'LINK_LOSS') {
    logger.warn({ sysid: e.sysid, lastFrameAt: at(e.lastFrameUs), thresholdSeconds: e.thresholdUs / 1e6 }, 'LINK_LOSS: no frame from the vehicle');
  } else {
    logger.info({ sysid: e.sysid, regainedAt: at(e.regainedAtUs), outageSeconds: e.outageUs / 1e6 }, 'vehicle link regained');
  }
}

function warningFields(w: SpoolWarning): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(w).map(([k, v]) => [k, typeof v === 'bigint' ? String(v) : v instanceof Error ? v.message : v]),
  );
}

function fatalHint(error: unknown): string {
  const name = (error as Error).name;
  if (name === 'SpoolFullError') return 'spool full and no uplink to free it: raise --spool-max-bytes (what was spooled is kept; the replay resumes)';
  return 'agent failed';
}
