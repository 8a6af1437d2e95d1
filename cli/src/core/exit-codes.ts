/** The CLI's exit codes (docs/cli.md): scripts branch on them, so they never change meaning. */
export const EXIT = {
  /** Done. */
  ok: 0,
  /** The service refused or failed the request (any error not below), or an answer was not the contract's. */
  failed: 1,
  /** Bad usage: unknown command or flag, a missing argument, an input the contract refuses (nothing was sent). */
  usage: 2,
  /** The service could not be reached (connection refused, DNS, TLS, time-out). */
  unreachable: 3,
  /** The key is missing, unknown, expired, revoked (401) or lacks the scope (403). */
  auth: 4,
  /** `commands watch`: the command ended nacked or timed out. */
  commandFailed: 5,
} as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** A failure the CLI itself decided, with the exit code it means. */
export class CliError extends Error {
  readonly exitCode: ExitCode;
  constructor(message: string, exitCode: ExitCode = EXIT.usage) {
    super(message);
    this.exitCode = exitCode;
  }
}
