import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestOrg, type TestService } from '../testing/test-service.ts';
import { expectEnvelope } from '../testing/expect-envelope.ts';

let t: TestService;
let org: TestOrg;

beforeAll(async () => {
  t = await startTestService({ env: { SORTIE_HTTP_BODY_LIMIT: '2048' } });
  org = await t.createOrg();
});
afterAll(() => t?.stop());

describe('HTTP core', () => {
  it('echoes X-Request-Id on success', async () => {
    const response = await t.call('GET', '/api/experiments/list', { key: org.key, headers: { 'X-Request-Id': 'trace-42' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-request-id')).toBe('trace-42');
  });

  it('generates a request id when none is sent, and a fresh one per request', async () => {
    const a = await t.call('GET', '/api/experiments/list', { key: org.key });
    const b = await t.call('GET', '/api/experiments/list', { key: org.key });
    expect(a.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{32}$/);
    expect(a.headers.get('x-request-id')).not.toBe(b.headers.get('x-request-id'));
  });

  it('replaces an unsafe request id instead of echoing it', async () => {
    const response = await t.call('GET', '/api/experiments/list', { key: org.key, headers: { 'X-Request-Id': 'a b<script>' } });
    expect(response.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it('answers unknown routes with the envelope (404 not_found)', async () => {
    const response = await t.call('GET', '/api/no/such/route', { headers: { 'X-Request-Id': 'r-404' } });
    expectEnvelope(response, 404, 'not_found');
    expect(response.body.error.request_id).toBe('r-404');
  });

  it('answers malformed JSON with 400 invalid_request', async () => {
    const response = await t.call('POST', '/api/experiments/create', {
      key: org.key,
      rawBody: '{"name": ',
      headers: { 'content-type': 'application/json' },
    });
    expectEnvelope(response, 400, 'invalid_request');
  });

  it('names the failing field with zero-based indexes', async () => {
    const response = await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: '' } });
    expectEnvelope(response, 400, 'invalid_request');
    expect(response.body.error.details).toEqual([expect.objectContaining({ field: 'name' })]);
  });

  it('answers an oversized body with 413 payload_too_large', async () => {
    const response = await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'x', description: 'y'.repeat(4000) } });
    expectEnvelope(response, 413, 'payload_too_large');
    expect(response.body.error.message).toContain('2048');
  });

  // A streamed body has no Content-Length: the limit is counted as it arrives (body-limit.ts).
  const chunked = (text: string) =>
    fetch(`${t.service.httpUrl}/api/experiments/create`, {
      method: 'POST',
      headers: { 'x-api-key': org.key, 'content-type': 'application/json' },
      body: new ReadableStream({
        start(controller) {
          const bytes = new TextEncoder().encode(text);
          for (let i = 0; i < bytes.length; i += 500) controller.enqueue(bytes.subarray(i, i + 500));
          controller.close();
        },
      }),
      duplex: 'half',
    } as RequestInit);

  it('answers an oversized chunked body with 413 payload_too_large', async () => {
    const response = await chunked(JSON.stringify({ name: 'x', description: 'y'.repeat(4000) }));
    expect(response.status).toBe(413);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('payload_too_large');
  });

  it('takes a chunked body within the limit', async () => {
    const response = await chunked(JSON.stringify({ name: 'chunked', description: 'y'.repeat(1500) }));
    expect(response.status).toBe(201);
    expect(((await response.json()) as { name: string }).name).toBe('chunked');
  });

  it('answers an unexpected fault with 500 internal_error and no stack trace', async () => {
    const other = await startTestService();
    try {
      const key = (await other.createOrg()).key;
      // A real fault: the database goes away under the running server.
      await other.service.ctx.database.close();
      const response = await other.call('GET', '/api/experiments/list', { key });
      expectEnvelope(response, 500, 'internal_error');
      const text = JSON.stringify(response.body);
      expect(text).not.toMatch(/at .*\.ts:\d+/);
      expect(text).not.toMatch(/destroyed|kysely|pool/i);
    } finally {
      await other.service.destroy().catch(() => {});
      await other.stop().catch(() => {});
    }
  });
});
