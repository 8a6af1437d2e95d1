import { ConfigError, loadConfig } from '../platform/config.ts';
import { migrateToLatest, openDatabase } from '../db/connect.ts';
import { embeddedHolder } from '../db/embedded-lock.ts';
import { AdminError, runAdminCommand, USAGE } from './commands.ts';

// Same configuration as the server, so the CLI always talks to the database the server uses.
const argv = process.argv.slice(2);
if (argv.length === 0 || argv[0] === '--help' || argv[0] === 'help') {
  console.log(USAGE);
  process.exit(argv.length === 0 ? 2 : 0);
}

let exitCode = 0;
try {
  const config = loadConfig();
  const holder = config.databaseUrl ? undefined : embeddedHolder(config.dataDir);
  if (holder) {
    throw new AdminError(
      'conflict',
      `the embedded database in ${config.dataDir} is in use by a running Sortie (pid ${holder}); stop it, run the admin command, then start it again (or use SORTIE_DATABASE_URL)`,
    );
  }
  const database = await openDatabase({ url: config.databaseUrl, dataDir: config.dataDir, poolSize: 2 });
  try {
    await migrateToLatest(database.db);
    const result = await runAdminCommand(database.db, argv);
    process.stdout.write(JSON.stringify(result) + '\n');
  } finally {
    await database.close();
  }
} catch (error) {
  if (error instanceof AdminError || error instanceof ConfigError) {
    const code = error instanceof AdminError ? error.code : 'invalid_config';
    process.stderr.write(JSON.stringify({ error: { code, message: error.message } }) + '\n');
    exitCode = error instanceof AdminError && error.code === 'forbidden' ? 3 : 2;
  } else {
    throw error;
  }
}
process.exitCode = exitCode;
