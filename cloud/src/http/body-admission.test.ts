import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { BodyBudget, bodyAdmission } from './body-admission.ts';

describe('request bodies handled at once are bounded in bytes', () => {
  it('admits bodies while they fit, holds the next in arrival order until bytes are given back', async () => {
    const budget = new BodyBudget(10);
    const order: string[] = [];
    const a = await budget.acquire(6);
    const b = budget.acquire(6).then((release) => (order.push('b'), release));
    const c = budget.acquire(3).then((release) => (order.push('c'), release));
    await new Promise((r) => setTimeout(r, 10));
    // c would fit beside a, but b came first and waits: c waits behind it.
    expect(order).toEqual([]);
    expect(budget.inUse).toBe(6);
    a();
    const releaseB = await b;
    const releaseC = await c;
    expect(order).toEqual(['b', 'c']);
    expect(budget.inUse).toBe(9);
    releaseB();
    releaseB(); // a second release gives nothing back twice
    releaseC();
    expect(budget.inUse).toBe(0);
  });

  it('drops a waiter whose client went away, and a body larger than the budget takes all of it', async () => {
    const budget = new BodyBudget(10);
    const held = await budget.acquire(100);
    expect(budget.inUse).toBe(10);
    const gone = new AbortController();
    const waiting = budget.acquire(1, gone.signal);
    gone.abort(new Error('client closed'));
    await expect(waiting).rejects.toThrow('client closed');
    held();
    expect(budget.inUse).toBe(0);
  });

  it('on the HTTP app: never more body bytes in handlers than the budget, and every request answered', async () => {
    const budget = new BodyBudget(2000);
    let inHandlers = 0;
    let most = 0;
    const app = new Hono();
    app.use('*', bodyAdmission(budget, 4096));
    app.post('/x', async (c) => {
      const text = await c.req.text();
      inHandlers += text.length;
      most = Math.max(most, inHandlers);
      await new Promise((r) => setTimeout(r, 5));
      inHandlers -= text.length;
      return c.text(String(text.length));
    });
    app.get('/y', (c) => c.text('no body'));
    const bodies = Array.from({ length: 20 }, (_, i) => 'x'.repeat(300 + i * 40));
    const answers = await Promise.all([
      ...bodies.map(async (body) => (await app.request('/x', { method: 'POST', body, headers: { 'content-length': String(body.length) } })).text()),
      (async () => (await app.request('/y')).text())(),
    ]);
    expect(answers).toEqual([...bodies.map((b) => String(b.length)), 'no body']);
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(2000);
    expect(budget.inUse).toBe(0);
  });
});
