import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: 'sortie-cloud' },
    // Never let a secret reach the logs, whatever a handler passes along.
    redact: { paths: ['*.apiKey', '*.secret', '*.token', 'req.headers["x-api-key"]', 'req.headers.authorization'], censor: '[redacted]' },
  });
}
