import { ConfigError, loadConfig } from './config.ts';
import { SortieService } from './service.ts';

try {
  const service = await SortieService.create(loadConfig());
  await service.start();
  const shutdown = async (signal: string) => {
    service.ctx.logger.info({ signal }, 'shutting down');
    await service.destroy();
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(`sortie: ${error.message}`);
    process.exit(2);
  }
  throw error;
}
