import { rootCertificates } from 'node:tls';
import { Agent, request } from 'undici';
import { createPinnedLookup } from '../webhooks/pinned-lookup.ts';
import type { ResolvedAddress } from '../webhooks/url-guard.ts';

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
  /** Extra trusted CA certificates (PEM), added to the public roots. */
  extraCa?: string | undefined;
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
 * One POST, the way the spec wants it: to the pinned addresses only (TLS still verifies the URL's
 * hostname), no redirect followed (undici's `request` never follows one), everything — connect, TLS,
 * headers and the part of the body we keep — inside one time limit. A fresh Agent per attempt: its
 * lookup is bound to this attempt's checked addresses, so no pooled socket can outlive a DNS check.
 */
export async function postWebhook(post: WebhookPost): Promise<WebhookAnswer> {
  const started = performance.now();
  const agent = new Agent({
    connect: {
      lookup: createPinnedLookup(post.addresses, { hostname: post.hostname }),
      ...(post.extraCa !== undefined && { ca: [...rootCertificates, post.extraCa] }),
      timeout: post.timeoutMs,
    },
    headersTimeout: post.timeoutMs,
    bodyTimeout: post.timeoutMs,
    connections: 1,
  });
  const signal = AbortSignal.timeout(post.timeoutMs);
  const elapsed = () => Math.round(performance.now() - started);
  try {
    const res = await request(post.url, { method: 'POST', headers: post.headers, body: post.body, dispatcher: agent, signal });
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
    agent.destroy().catch(() => {});
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
