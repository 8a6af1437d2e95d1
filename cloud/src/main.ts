import { ConfigError, loadConfig } from './platform/config.ts';
import { SortieService } from './service.ts';
import { exitOnSignals } from './shutdown.ts';

try {
  const service = await SortieService.create(loadConfig());
  await service.start();
  exitOnSignals({ destroy: () => service.destroy(), logger: service.ctx.logger, graceMs: service.ctx.config.shutdownGraceMs });
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(`sortie: ${error.message}`);
    process.exit(2);
  }
  throw error;
}
