import { afterEach, describe, expect, it } from 'vitest';
import { TEST_NATS_URL, uniqueNatsNamespace } from '../testing/nats-server.ts';
import { createLogger } from './logger.ts';
import { LocalLiveBus, NatsLiveBus, type LiveBus } from './live-bus.ts';

// Both buses against the same expectations; the NATS one on the real server, with two buses in one
// namespace standing for two replicas.

const DATASET = '4b0c3f6e-2a54-4d52-9d0b-8a1c1b2f6e01';
const OTHER = '9e1d2c3b-4a5f-4e6d-8c7b-6a5f4e3d2c1b';
const logger = createLogger('silent');

/** A listener that counts its calls. */
function counter() {
  let n = 0;
  return { listener: () => void n++, get count() { return n; } };
}

const settle = (ms = 150) => new Promise((r) => setTimeout(r, ms));

const opened: LiveBus[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((b) => b.close()));
});

describe.each([
  ['LocalLiveBus', async (): Promise<[LiveBus, LiveBus]> => {
    const bus = new LocalLiveBus(logger);
    return [bus, bus];
  }],
  ['NatsLiveBus (two replicas, one namespace)', async (): Promise<[LiveBus, LiveBus]> => {
    const namespace = uniqueNatsNamespace();
    const a = await NatsLiveBus.connect({ url: TEST_NATS_URL, namespace, logger });
    const b = await NatsLiveBus.connect({ url: TEST_NATS_URL, namespace, logger });
    opened.push(a, b);
    return [a, b];
  }],
])('%s', (_, open) => {
  it('a follower hears each announcement of its dataset, from any replica, and no other dataset\'s', async () => {
    const [announcer, follower] = await open();
    const mine = counter();
    const stop = follower.follow(DATASET, mine.listener);
    await settle(); // the subscription reaches the server
    announcer.committed(DATASET);
    announcer.committed(OTHER);
    announcer.committed(DATASET);
    await settle();
    expect(mine.count).toBe(2);
    stop();
  });

  it('several followers of one dataset each hear it; a stopped one hears nothing more', async () => {
    const [announcer, follower] = await open();
    const first = counter();
    const second = counter();
    const stopFirst = follower.follow(DATASET, first.listener);
    const stopSecond = follower.follow(DATASET, second.listener);
    await settle();
    announcer.committed(DATASET);
    await settle();
    stopFirst();
    announcer.committed(DATASET);
    await settle();
    expect([first.count, second.count]).toEqual([1, 2]);
    stopSecond();
    // Followed again after its last follower left: heard again.
    const third = counter();
    const stopThird = follower.follow(DATASET, third.listener);
    await settle();
    announcer.committed(DATASET);
    await settle();
    expect([first.count, second.count, third.count]).toEqual([1, 2, 1]);
    stopThird();
  });

  it('a follower that throws does not keep the others from hearing', async () => {
    const [announcer, follower] = await open();
    const heard = counter();
    const stopBad = follower.follow(DATASET, () => {
      throw new Error('broken follower');
    });
    const stop = follower.follow(DATASET, heard.listener);
    await settle();
    announcer.committed(DATASET);
    await settle();
    expect(heard.count).toBe(1);
    stopBad();
    stop();
  });
});

describe('NatsLiveBus', () => {
  it('another namespace (another deployment on the same NATS) hears nothing', async () => {
    const a = await NatsLiveBus.connect({ url: TEST_NATS_URL, namespace: uniqueNatsNamespace(), logger });
    const b = await NatsLiveBus.connect({ url: TEST_NATS_URL, namespace: uniqueNatsNamespace(), logger });
    opened.push(a, b);
    const heard = counter();
    b.follow(DATASET, heard.listener);
    await settle();
    a.committed(DATASET);
    await settle();
    expect(heard.count).toBe(0);
  });
});
