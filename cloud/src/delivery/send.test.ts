import { afterEach, describe, expect, it } from 'vitest';
import { WebhookAgents } from './send.ts';

describe('WebhookAgents', () => {
  let agents: WebhookAgents;
  afterEach(() => agents?.close());

  const a = (address: string) => ({ address, family: 4 as const });

  it('reuses a pool only for the same host and the same checked address set', () => {
    agents = new WebhookAgents({ timeoutMs: 1000 });
    const first = agents.get('hooks.example.com', [a('93.184.216.34'), a('93.184.216.35')]);
    expect(agents.get('HOOKS.example.com', [a('93.184.216.35'), a('93.184.216.34')])).toBe(first);
    // A different DNS answer never borrows sockets connected for the old one.
    expect(agents.get('hooks.example.com', [a('93.184.216.34')])).not.toBe(first);
    expect(agents.get('other.example.com', [a('93.184.216.34'), a('93.184.216.35')])).not.toBe(first);
  });

  it('keeps at most maxHosts pools, dropping the least recently used', () => {
    agents = new WebhookAgents({ timeoutMs: 1000, maxHosts: 2 });
    const one = agents.get('one.example', [a('93.184.216.1')]);
    const two = agents.get('two.example', [a('93.184.216.2')]);
    expect(agents.get('one.example', [a('93.184.216.1')])).toBe(one); // one is now the most recent
    agents.get('three.example', [a('93.184.216.3')]);
    expect(agents.get('one.example', [a('93.184.216.1')])).toBe(one);
    expect(agents.get('two.example', [a('93.184.216.2')])).not.toBe(two);
  });
});
