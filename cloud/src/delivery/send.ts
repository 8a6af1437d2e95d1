import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import type { IncomingHttpHeaders } from 'node:http';
import { Agent, type Dispatcher } from 'undici';
import { createPinnedLookup } from '../net/pinned-lookup.ts';
import type { ResolvedAddress } from '../net/url-guard.ts';

/** How much of a receiver's answer is kept in the attempt row (bytes of the body, as UTF-8 text). */
export const RESPONSE_KEEP_BYTES = 2048;

export interface WebhookPost {
  url: URL;
  /** The checked hostname and the addresses it resolved to a moment ago: the only ones we connect to. */
  hostname: string;
  addresses: ResolvedAddress[];
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
}

export interface WebhookAnswer {
  /** Undefined when no HTTP answer came (refused, reset, TLS failure, time-out). */
  statusCode?: number;
  retryAfter?: string;
  location?: string;
  /** The first RESPONSE_KEEP_BYTES of the body. */
  response: string;
  error?: string;
  durationMs: number;
}

/**
 * Connection pools for webhook hosts, keyed by the hostname AND the exact set of addresses the URL check
 * just approved. A pooled socket is therefore reused only by an attempt whose own fresh DNS check
 * returned the same set: a changed answer gets a new Agent whose lookup knows only the new addresses.
 * Reuse matters: a TLS handshake per delivery costs more than the delivery.
 */
export class WebhookAgents {
  readonly #agents = new Map<string, Agent>();
  readonly #max: number;
  /** Built once per trust: a context per connection would parse every root certificate on every handshake. */
  #secureContext: SecureContext | undefined;
  readonly #timeoutMs: number;

  constructor(options: { extraCa?: string | undefined; timeoutMs: number; maxHosts?: number }) {
    this.#secureContext = secureContextFor(options.extraCa);
    this.#timeoutMs = options.timeoutMs;
    this.#max = options.maxHosts ?? 256;
  }

  /** Another set of extra CA certificates: pools made from now on use it; pooled connections are let go. */
  trust(extraCa: string | undefined): void {
    this.#secureContext = secureContextFor(extraCa);
    void this.close();
  }

  get(hostname: string, addresses: readonly ResolvedAddress[]): Agent {
    const key = `${hostname.toLowerCase()}|${addresses.map((a) => a.address).sort().join(',')}`;
    const existing = this.#agents.get(key);
    if (existing) {
      // Map order is insertion order: re-inserting keeps the most recently used last.
      this.#agents.delete(key);
      this.#agents.set(key, existing);
      return existing;
    }
    const agent = new Agent({
      connect: {
        lookup: createPinnedLookup(addresses, { hostname }),
        ...(this.#secureContext !== undefined && { secureContext: this.#secureContext }),
        timeout: this.#timeoutMs,
      },
      headersTimeout: this.#timeoutMs,
      bodyTimeout: this.#timeoutMs,
      keepAliveTimeout: 10_000,
      connections: 32,
    });
    this.#agents.set(key, agent);
    if (this.#agents.size > this.#max) {
      const [oldestKey, oldest] = this.#agents.entries().next().value as [string, Agent];
      this.#agents.delete(oldestKey);
      oldest.close().catch(() => {});
    }
    return agent;
  }

  async close(): Promise<void> {
    const agents = [...this.#agents.values()];
    this.#agents.clear();
    await Promise.all(agents.map((a) => a.close().catch(() => {})));
  }
}

function secureContextFor(extraCa: string | undefined): SecureContext | undefined {
  return extraCa === undefined ? undefined : createSecureContext({ ca: [...rootCertificates, extraCa] });
}

/**
 * One POST, the way the spec wants it: to the pinned addresses only (TLS still verifies the URL's
 * hostname), no redirect followed (a dispatcher never follows one), everything — connect, TLS, headers
 * and the part of the body we keep — inside one time limit.
 *
 * Sent through the dispatcher with a handler of our own (AnswerReader) rather than undici's `request`:
 * `request` wraps the answer's body in a stream, and at bench:dispatch's 200 dispatches/s that wrapper
 * kept every attempt's objects (its body, its request, the stream) alive through two young-generation
 * collections, so each was promoted to the old generation (~5 KB an attempt), and the Mark-Compacts
 * that freed them every ~4 s paused the process for 4–10 ms and made the dispatch p99
 * (docs/PERFORMANCE.md). The handler keeps the status, two headers and the first RESPONSE_KEEP_BYTES
 * bytes, and nothing else lives past the answer.
 */
export function postWebhook(post: WebhookPost, agents: WebhookAgents): Promise<WebhookAnswer> {
  return new Promise((resolve) => {
    const reader = new AnswerReader(post.timeoutMs, resolve);
    try {
      agents.get(post.hostname, post.addresses).dispatch(
        { origin: post.url.origin, path: `${post.url.pathname}${post.url.search}`, method: 'POST', headers: post.headers, body: post.body },
        reader,
      );
    } catch (error) {
      reader.onResponseError(undefined, error as Error);
    }
  });
}

/** Why an answer is cut off once it was read: enough of its body is kept, or the time limit came. */
class AnswerDone extends Error {
  override name = 'AnswerDone';
}

/** UTF-8 without streaming state, so one instance serves every answer. */
const utf8 = new TextDecoder();

/**
 * Reads one answer for postWebhook, as undici's dispatch handler: settles exactly once, with the status
 * (undefined when no HTTP answer came), Retry-After, Location and the body's first RESPONSE_KEEP_BYTES
 * bytes, and aborts what is left of the exchange. An answer whose body fails or outlasts the time limit
 * after its status came keeps its status and the bytes that arrived (the status decided the outcome).
 */
class AnswerReader implements Dispatcher.DispatchHandler {
  readonly #started = performance.now();
  readonly #timeoutMs: number;
  readonly #resolve: (answer: WebhookAnswer) => void;
  readonly #timer: NodeJS.Timeout;
  #controller: Dispatcher.DispatchController | undefined;
  #settled = false;
  #statusCode: number | undefined;
  #retryAfter: string | undefined;
  #location: string | undefined;
  #chunks: Buffer[] = [];
  #size = 0;

  constructor(timeoutMs: number, resolve: (answer: WebhookAnswer) => void) {
    this.#timeoutMs = timeoutMs;
    this.#resolve = resolve;
    this.#timer = setTimeout(() => this.#timeout(), timeoutMs);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    // Timed out while connecting: the request is dropped before it is written.
    if (this.#settled) controller.abort(new AnswerDone('the attempt is over'));
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    if (statusCode < 200) return; // an informational answer; the real one follows
    this.#statusCode = statusCode;
    if (typeof headers['retry-after'] === 'string') this.#retryAfter = headers['retry-after'];
    if (typeof headers.location === 'string') this.#location = headers.location;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#settled) return;
    this.#chunks.push(chunk);
    this.#size += chunk.byteLength;
    if (this.#size >= RESPONSE_KEEP_BYTES) {
      // Enough kept: the rest is not read, and the connection is not reused.
      this.#answer();
      controller.abort(new AnswerDone('the kept part of the answer was read'));
    }
  }

  onResponseEnd(): void {
    this.#answer();
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, error: Error): void {
    if (this.#statusCode !== undefined) this.#answer();
    else this.#settle({ response: '', error: describeNetworkError(error, this.#timeoutMs) });
  }

  #timeout(): void {
    if (this.#statusCode !== undefined) this.#answer();
    else this.#settle({ response: '', error: `timed out after ${this.#timeoutMs} ms` });
    this.#controller?.abort(new AnswerDone(`timed out after ${this.#timeoutMs} ms`));
  }

  /** The answer as it came: its status, the two headers kept and the start of its body. */
  #answer(): void {
    // Once settled, an abort of ours still comes back through onResponseError: nothing left to read.
    if (this.#settled) return;
    // A multi-byte character cut at the limit decodes as U+FFFD rather than failing.
    const bytes = Buffer.concat(this.#chunks, Math.min(this.#size, RESPONSE_KEEP_BYTES));
    this.#settle({
      statusCode: this.#statusCode!,
      ...(this.#retryAfter !== undefined && { retryAfter: this.#retryAfter }),
      ...(this.#location !== undefined && { location: this.#location }),
      response: utf8.decode(bytes),
    });
  }

  #settle(answer: Omit<WebhookAnswer, 'durationMs'>): void {
    if (this.#settled) return;
    this.#settled = true;
    clearTimeout(this.#timer);
    this.#chunks = [];
    this.#resolve({ ...answer, durationMs: Math.round(performance.now() - this.#started) });
  }
}

function describeNetworkError(error: unknown, timeoutMs: number): string {
  const err = error as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  const code = err.cause?.code ?? err.code;
  const message = err.cause?.message ?? err.message ?? String(error);
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    return `timed out after ${timeoutMs} ms`;
  }
  return code ? `${code}: ${message}` : message;
}
