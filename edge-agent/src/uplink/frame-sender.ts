// The frame half of the gRPC uplink: spooled frames → StreamSubmit (mavlink-raw-v1), one attempt
// after another. One reader follows the spool from its acked seq and routes each record by system id
// to that system's sessions (system-stream.ts); each answer settles its session in the AckTracker,
// and the spool is acked up to the tracker's safe seq. Any failure ends the attempt, and after a
// back-off a new one reads again from the spool's acked seq (grpc-uplink.ts tells why that is safe).
import { Code, ConnectError } from '@connectrpc/connect';
import type { StreamSubmitResponse } from '@sortie/contracts';
import { sleep } from '../core/clock.ts';
import { decodeAgentRecord } from '../record/agent-record.ts';
import { AckTracker } from './ack-tracker.ts';
import { Backoff } from './backoff.ts';
import type { BackoffOptions } from './backoff.ts';
import { classifyFailure, describeFailure } from './cloud-api.ts';
import type { DatasetRegistry } from './dataset-registry.ts';
import type { FrameSession, SubmitStream } from './stream-session.ts';
import { SystemStream } from './system-stream.ts';
import type { UplinkInputs, UplinkState } from './uplink.ts';

/** What the operator is shown of the attempts (the uplink's status()); the sender keeps it current. */
export interface AttemptStatus {
  state: UplinkState;
  detail: string | undefined;
  /** While backing off: when the next attempt starts, ms since the epoch. */
  retryAtMs: number | null;
}

/** Totals of the frame sender since start. */
export interface FrameCounters {
  sent: number;
  confirmed: number;
  written: number;
  duplicates: number;
  sessions: number;
  failures: number;
}

export interface FrameSenderOptions {
  readonly inputs: UplinkInputs;
  readonly registry: Promise<DatasetRegistry>;
  readonly submit: SubmitStream;
  readonly experimentId: string;
  readonly opts: {
    readonly sessionMaxFrames: number;
    readonly sessionMaxMs: number;
    readonly batchPoints: number;
    readonly maxSessionsInFlight: number;
    readonly stopGraceMs: number;
    readonly backoff: BackoffOptions;
  };
  /** Aborted when the uplink stops. */
  readonly stop: AbortSignal;
  readonly status: AttemptStatus;
  readonly counters: FrameCounters;
  /** Called whenever something was confirmed or an attempt failed (wakes drain()). */
  readonly progress: () => void;
}

/** The failure that ended an attempt, with the system whose dataset it concerned (if one). */
class AttemptFailure extends Error {
  override readonly name = 'AttemptFailure';
  readonly sysid: number | null;
  constructor(cause: unknown, sysid: number | null) {
    super(describeFailure(cause), { cause });
    this.sysid = sysid;
  }
}

export class FrameSender {
  readonly #o: FrameSenderOptions;

  constructor(options: FrameSenderOptions) {
    this.#o = options;
  }

  /** Attempts until the uplink stops. */
  async run(): Promise<void> {
    const { inputs, status, counters } = this.#o;
    const { logger } = inputs;
    const backoff = new Backoff(this.#o.opts.backoff);
    let lastProblem = '';
    let downSinceMs: number | null = null;
    while (!this.#o.stop.aborted) {
      status.state = 'connecting';
      status.retryAtMs = null;
      try {
        await this.#attempt(() => {
          if (downSinceMs !== null) {
            logger.info({ outageSeconds: (Date.now() - downSinceMs) / 1000, backlog: inputs.spool.stats().pending }, 'cloud reachable again: streaming the backlog');
            downSinceMs = null;
            lastProblem = '';
          }
          backoff.reset();
        });
      } catch (error) {
        if (this.#o.stop.aborted) break;
        const failure = error instanceof AttemptFailure ? error : new AttemptFailure(error, null);
        const cause = failure.cause;
        const kind = classifyFailure(cause);
        counters.failures++;
        if (cause instanceof ConnectError && cause.code === Code.NotFound && failure.sysid !== null) {
          // The cached dataset id is unknown to the cloud: register again on the next attempt.
          await (await this.#o.registry).forget(failure.sysid);
        }
        const delay = backoff.next({ permanent: kind.permanent });
        downSinceMs ??= Date.now();
        status.state = 'backing-off';
        status.detail = `${kind.label}: ${failure.message}`;
        status.retryAtMs = Date.now() + delay;
        const problem = status.detail;
        const fields = { error: failure.message, kind: kind.label, permanent: kind.permanent, retryInMs: delay, failures: backoff.failures };
        if (problem !== lastProblem || backoff.failures % 10 === 0) {
          if (kind.permanent) logger.error(fields, 'the cloud refuses the uplink; retrying at the longest interval, frames stay in the spool');
          else logger.warn(fields, 'cloud unreachable; frames stay in the spool and are sent when it is back');
        } else {
          logger.debug(fields, 'cloud still unreachable');
        }
        lastProblem = problem;
        this.#o.progress();
        await sleep(delay, this.#o.stop);
      }
    }
  }

  /**
   * One connection attempt: streams until stopped (resolves) or until something fails (rejects with
   * an AttemptFailure). `onSuccess` runs after each confirmed session.
   */
  async #attempt(onSuccess: () => void): Promise<void> {
    const { inputs, status, counters } = this.#o;
    const { spool, logger } = inputs;
    const registry = await this.#o.registry;
    const opts = this.#o.opts;
    const baseline = spool.ackedSeq;
    const tracker = new AckTracker(baseline);
    const reading = new AbortController();
    const calls = new AbortController();
    const stopReading = (): void => reading.abort();
    this.#o.stop.addEventListener('abort', stopReading, { once: true });
    let failure: AttemptFailure | null = null;
    const fail = (error: unknown, sysid: number | null): void => {
      if (failure || this.#o.stop.aborted) return;
      failure = error instanceof AttemptFailure ? error : new AttemptFailure(error, sysid);
      reading.abort();
      calls.abort();
    };
    const ackSafe = (): void => {
      const safe = tracker.safeAck();
      if (safe > spool.ackedSeq) {
        try {
          spool.ack(safe);
        } catch (error) {
          fail(error, null);
        }
      }
    };
    const onAnswer = (session: FrameSession, response: StreamSubmitResponse): void => {
      if (failure) return;
      if (!session.closed) {
        fail(new Error('the cloud answered a StreamSubmit session before it was half-closed'), session.sysid);
        return;
      }
      if (response.accepted !== BigInt(session.frames)) {
        fail(new Error(`the cloud accepted ${response.accepted} of ${session.frames} frames of a session`), session.sysid);
        return;
      }
      tracker.settle(session.range);
      counters.confirmed += session.frames;
      counters.written += Number(response.written);
      counters.duplicates += Number(response.duplicates);
      counters.sessions++;
      status.state = 'streaming';
      status.detail = undefined;
      onSuccess();
      ackSafe();
      this.#o.progress();
    };

    const streams = new Map<number, SystemStream>();
    try {
      for await (const record of spool.records({ afterSeq: baseline, signal: reading.signal, batchSize: 1024 })) {
        let decoded;
        try {
          decoded = decodeAgentRecord(record.payload);
        } catch (error) {
          // Cannot happen for records this agent wrote; never let one wedge the uplink.
          logger.warn({ seq: String(record.seq), error: (error as Error).message }, 'skipping a spool record that is not an agent record');
          tracker.skip(record.seq);
          if (tracker.unsettled === 0) ackSafe();
          continue;
        }
        let stream = streams.get(decoded.sysid);
        if (!stream) {
          let datasetId: string;
          try {
            datasetId = await registry.datasetId(decoded.sysid, reading.signal);
          } catch (error) {
            fail(error, decoded.sysid);
            break;
          }
          stream = new SystemStream({
            sysid: decoded.sysid,
            experimentId: this.#o.experimentId,
            datasetId,
            submit: this.#o.submit,
            tracker,
            signal: calls.signal,
            readingSignal: reading.signal,
            opts,
            onAnswer,
            onFailure: (error) => fail(error, decoded.sysid),
          });
          streams.set(decoded.sysid, stream);
        }
        counters.sent++;
        await stream.push(record.seq, record.receivedAtUs, decoded.frame);
        if (failure) break;
      }
    } catch (error) {
      fail(error, null);
    } finally {
      this.#o.stop.removeEventListener('abort', stopReading);
    }

    if (!failure) {
      // Stopping: send what is queued, give the answers a moment, then cancel.
      for (const s of streams.values()) s.cut();
      const settled = Promise.allSettled([...streams.values()].flatMap((s) => s.inFlight().map((x) => x.result)));
      await Promise.race([settled, sleep(opts.stopGraceMs)]);
    }
    for (const s of streams.values()) s.dispose();
    calls.abort();
    if (failure) throw failure;
  }
}
