/** Exit codes of docs/cli.md#exit-codes. */
export const EXIT = {
  ok: 0,
  failed: 1,
  invalid: 2,
  timeout: 3,
  unreachable: 4,
} as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** An error the CLI reports on stderr in one or two lines, with the exit code it maps to. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export const invalid = (message: string) => new CliError(message, EXIT.invalid);
export const unreachable = (message: string) => new CliError(message, EXIT.unreachable);
