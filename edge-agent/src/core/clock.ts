// The agent's clock, in µs since the Unix epoch: the wall clock read once at process start plus the
// monotonic clock since. Receive times stamped with it never run backwards, and an NTP step during a
// flight cannot fake (or hide) a vehicle link outage; the price is that a step after start-up is not
// followed until the agent restarts (time alignment on the server uses the vehicle's own clock first).
export interface Clock {
  nowUs(): number;
}

export const agentClock: Clock = {
  nowUs: () => Math.round((performance.timeOrigin + performance.now()) * 1000),
};

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted || ms <= 0) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
