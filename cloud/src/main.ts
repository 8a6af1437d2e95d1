import { startupBanner } from './service/banner.ts';
import { ConfigError, loadConfig } from './platform/config.ts';
import { DatabaseStartupError } from './db/connect.ts';
import { SortieService } from './service/service.ts';
import { exitOnSignals } from './service/shutdown.ts';
import { tuneHeap } from './platform/heap.ts';

tuneHeap();

try {
  const service = await SortieService.create(loadConfig());
  await service.start();
  if (process.stdout.isTTY) {
    const { config, database } = service.ctx;
    process.stdout.write(
      startupBanner({
        httpHost: config.http.host,
        httpPort: service.httpPort,
        grpcHost: config.grpc.host,
        grpcPort: service.grpcPort,
        publicUrl: config.publicUrl,
        database: database.kind,
        dataDir: config.dataDir,
      }),
    );
  }
  exitOnSignals({ destroy: () => service.destroy(), logger: service.ctx.logger, graceMs: service.ctx.config.shutdownGraceMs });
} catch (error) {
  if (error instanceof ConfigError || error instanceof DatabaseStartupError) {
    console.error(`sortie: ${error.message}`);
    process.exit(2);
  }
  throw error;
}
