import path from 'node:path';
import { ConfigError, loadConfig } from '../platform/config.ts';
import { migrateToLatest, openDatabase } from '../db/connect.ts';
import { embeddedHolder } from '../db/embedded-lock.ts';
import { AdminError, PATH_OPTIONS, runAdminCommand, USAGE } from './commands.ts';
import { adminSocketPath, callAdminSocket } from './socket.ts';

/** File arguments as absolute paths: a running server reads them from its own working directory. */
function absolutePaths(args: readonly string[]): string[] {
  return args.map((arg, i) => {
    const flag = args[i - 1];
    if (flag !== undefined && PATH_OPTIONS.includes(flag)) return path.resolve(arg);
    const eq = PATH_OPTIONS.find((o) => arg.startsWith(`${o}=`));
    return eq ? `${eq}=${path.resolve(arg.slice(eq.length + 1))}` : arg;
  });
}

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
  let result: unknown;
  if (holder) {
    // The embedded database belongs to the running server: the command runs there (admin/socket.ts).
    const answered = await callAdminSocket(config.dataDir, absolutePaths(argv));
    if (!answered) {
      throw new AdminError(
        'conflict',
        `the embedded database in ${config.dataDir} is in use by a running Sortie (pid ${holder}) that does not answer on ${adminSocketPath(config.dataDir)}; stop it, run the admin command, then start it again (or use SORTIE_DATABASE_URL)`,
      );
    }
    result = answered.result;
  } else {
    const database = await openDatabase({ url: config.databaseUrl, dataDir: config.dataDir, poolSize: 2 });
    try {
      await migrateToLatest(database.db);
      result = await runAdminCommand(database.db, argv);
    } finally {
      await database.close();
    }
  }
  process.stdout.write(JSON.stringify(result) + '\n');
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
