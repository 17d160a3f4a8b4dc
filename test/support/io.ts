// The CLI's Io for tests: what `wave …` printed, on stdout and on stderr.
import type { Io } from "../../src/cli/main.ts";

export function captureIo(): Io & { stdout: string[]; stderr: string[] } {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return {
    stdout,
    stderr,
    out: (t) => stdout.push(t),
    err: (t) => stderr.push(t),
    env: {},
    signal: new AbortController().signal,
  };
}
