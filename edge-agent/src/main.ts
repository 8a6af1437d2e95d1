// `npm run agent -- …`: parse the settings, start the agent, shut down in order on SIGINT/SIGTERM.
// Exit codes: 0 clean end, 1 failure, 2 bad usage, 130 a second signal cut the shutdown short.
import { ConfigError, HELP_TEXT, describeConfig, parseCli } from './config.ts';
import type { CliResult } from './config.ts';
import { startAgent } from './agent.ts';
import type { AgentRun } from './agent.ts';
import { createLogger } from './status/logger.ts';
import type { StatusReporter } from './status/status-reporter.ts';

let cli: CliResult;
try {
  cli = parseCli(process.argv.slice(2), process.env);
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  process.stderr.write(`sortie-agent: ${error.message}\n`);
  process.exit(2);
}
if (cli.help) {
  process.stdout.write(HELP_TEXT);
  process.exit(0);
}
const { config } = cli;

const tty = process.stdout.isTTY ? process.stdout : null;
let reporter: StatusReporter | null = null;
const logger = createLogger({
  level: config.logLevel,
  tty: tty ? { out: process.stdout, statusLine: { clear: () => reporter?.clear() } } : null,
});
logger.debug({ config: describeConfig(config) }, 'configuration');

let run: AgentRun;
try {
  run = await startAgent(config, { logger, tty, onReporter: (r) => (reporter = r) });
} catch (error) {
  logger.fatal({ error: (error as Error).message }, 'could not start');
  process.exit(1);
}

let signals = 0;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (++signals > 1) {
      process.stderr.write('\nsortie-agent: second signal, exiting without finishing the shutdown (the spool recovers on the next start)\n');
      process.exit(130);
    }
    run.stop(signal);
  });
}

process.exit(await run.done);
