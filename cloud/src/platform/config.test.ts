import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseRetrySchedule } from './config.ts';

describe('parseRetrySchedule', () => {
  it('reads ms, s, m and h', () => {
    expect(parseRetrySchedule('500ms, 1s,2m,1h')).toEqual([500, 1000, 120_000, 3_600_000]);
  });
  it.each(['', '5', '1d', '0s', '2h', 'x,1s'])('rejects %j', (text) => {
    expect(() => parseRetrySchedule(text)).toThrow();
  });
});

describe('SORTIE_WEBHOOK_RETRY_SCHEDULE', () => {
  it('defaults to 1s up to 60s', () => {
    expect(loadConfig({}).webhook.retryScheduleMs).toEqual([1000, 2000, 5000, 10_000, 20_000, 30_000, 60_000]);
  });
  it('names the variable and the wait it cannot read', () => {
    expect(() => loadConfig({ SORTIE_WEBHOOK_RETRY_SCHEDULE: '1s,1d' })).toThrow(ConfigError);
    expect(() => loadConfig({ SORTIE_WEBHOOK_RETRY_SCHEDULE: '1s,1d' })).toThrow(/SORTIE_WEBHOOK_RETRY_SCHEDULE: "1d" is not a wait/);
  });
});
