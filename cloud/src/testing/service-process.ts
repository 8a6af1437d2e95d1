import { loadConfig } from '../platform/config.ts';
import { SortieService } from '../service/service.ts';
import { exitOnSignals } from '../service/shutdown.ts';
import { tableResolver } from './table-resolver.ts';

/**
 * The cloud as a child process for crash tests: configured from SORTIE_* like main.ts, plus
 * - SORTIE_TEST_HOSTS: JSON name → addresses, the only DNS it gets (tests never leave loopback);
 * - SORTIE_TEST_CRASH_AFTER_DISPATCH=1: SIGKILL itself after a dispatch commits, before publishing.
 * Prints `READY <httpPort> <grpcPort>` once listening; logs go to stdout as JSON lines (SORTIE_LOG_LEVEL).
 */
const resolver = tableResolver(JSON.parse(process.env.SORTIE_TEST_HOSTS ?? '{}') as Record<string, string[]>);
const crash = process.env.SORTIE_TEST_CRASH_AFTER_DISPATCH === '1';

const service = await SortieService.create(loadConfig(), {
  resolver,
  ...(crash && { afterDispatchCommit: () => process.kill(process.pid, 'SIGKILL') }),
});
await service.start();
process.stdout.write(`READY ${service.httpPort} ${service.grpcPort}\n`);
// The same signal handling as main.ts, so shutdown tests exercise the real thing.
exitOnSignals({ destroy: () => service.destroy(), logger: service.ctx.logger, graceMs: service.ctx.config.shutdownGraceMs });
