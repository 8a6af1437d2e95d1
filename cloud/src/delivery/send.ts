import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import { Agent, request } from 'undici';
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
 * hostname), no redirect followed (undici's `request` never follows one), everything — connect, TLS,
 * headers and the part of the body we keep — inside one time limit.
 */
export async function postWebhook(post: WebhookPost, agents: WebhookAgents): Promise<WebhookAnswer> {
  const started = performance.now();
  // A timer cleared when the attempt ends, not AbortSignal.timeout: that one keeps its signal, timer and
  // finalizer registration alive for the full 10 s after an attempt of a few milliseconds.
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), post.timeoutMs);
  const signal = controller.signal;
  const elapsed = () => Math.round(performance.now() - started);
  try {
    const dispatcher = agents.get(post.hostname, post.addresses);
    const res = await request(post.url, { method: 'POST', headers: post.headers, body: post.body, dispatcher, signal });
    let response = '';
    try {
      response = await readSome(res.body, RESPONSE_KEEP_BYTES);
    } catch {
      // The status already decided the outcome; a body cut short is only less to show.
    }
    return {
      statusCode: res.statusCode,
      ...(typeof res.headers['retry-after'] === 'string' && { retryAfter: res.headers['retry-after'] }),
      ...(typeof res.headers.location === 'string' && { location: res.headers.location }),
      response,
      durationMs: elapsed(),
    };
  } catch (error) {
    return { response: '', error: describeNetworkError(error, signal, post.timeoutMs), durationMs: elapsed() };
  } finally {
    clearTimeout(timer);
  }
}

async function readSome(body: AsyncIterable<Uint8Array> & { destroy(): void }, limit: number): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.byteLength;
    if (size >= limit) break;
  }
  body.destroy();
  const bytes = Buffer.concat(chunks).subarray(0, limit);
  // A multi-byte character cut at the limit decodes as U+FFFD rather than failing.
  return new TextDecoder().decode(bytes);
}

function describeNetworkError(error: unknown, signal: AbortSignal, timeoutMs: number): string {
  if (signal.aborted) return `timed out after ${timeoutMs} ms`;
  const err = error as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  const code = err.cause?.code ?? err.code;
  const message = err.cause?.message ?? err.message ?? String(error);
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    return `timed out after ${timeoutMs} ms`;
  }
  return code ? `${code}: ${message}` : message;
}
