/**
 * Where a command writes and what environment it reads. Commands take it as an argument rather than reaching for
 * `process`, so tests can run `main(argv, io)` in-process and read exactly what a user would see.
 */
export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: NodeJS.ProcessEnv;
}

export const processIo: CliIo = {
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
  env: process.env,
};
