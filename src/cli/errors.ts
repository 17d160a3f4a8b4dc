// The CLI's failures and their exit codes. Every subcommand throws one of these (or a
// ConfigError); main.ts turns it into one line on stderr and the code from exitCode().

/** A mistake in how the CLI was called: printed as one line, exit code 2. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** Core (or the apiserver) did not answer at all: exit code 3. */
export class UnreachableError extends Error {
  override name = "UnreachableError";
}

/** Core answered but refused, or the thing named does not exist: exit code 4. */
export class RefusedError extends Error {
  override name = "RefusedError";
  /** Core's HTTP status, when core said so. */
  status?: number;
}

/** Core answered with a failure of its own (5xx): exit code 1. */
export class CoreError extends Error {
  override name = "CoreError";
}

/** The exit codes, as `wave --help` and the README document them. */
export const EXIT = { ok: 0, error: 1, usage: 2, unreachable: 3, refused: 4 } as const;

/** Answers from core that mean "refused or not found" rather than "broken". */
const REFUSED_STATUSES = new Set([401, 403, 404, 409]);

/** The error for a non-2xx answer from core: 401/403/404/409 → refused (4), 400 → usage (2), else 1. */
export function coreAnswerError(status: number, message: string): Error {
  const text = `core answered ${status}: ${message}`;
  if (REFUSED_STATUSES.has(status)) return Object.assign(new RefusedError(text), { status });
  if (status === 400) return new UsageError(text);
  return new CoreError(text);
}

/** The one mapping from a failure to the process's exit code. */
export function exitCode(err: unknown): number {
  if (err instanceof UnreachableError) return EXIT.unreachable;
  if (err instanceof RefusedError) return EXIT.refused;
  if (err instanceof UsageError) return EXIT.usage;
  if (err instanceof Error && (err.name === "ConfigError" || isUserFacing(err))) return EXIT.usage;
  return EXIT.error;
}

/** Errors the components mark as the user's to fix (a missing certificate, say). */
function isUserFacing(err: Error): boolean {
  return (err as Error & { userFacing?: boolean }).userFacing === true;
}

/** The exit codes' lines in `wave --help`. */
export const exitCodesHelp =
  "Exit codes:\n" +
  "  0  ok\n" +
  "  1  error (core failed, an unexpected fault)\n" +
  "  2  usage (a bad flag, argument or configuration; core answered 400)\n" +
  "  3  core unreachable (no answer at --server)\n" +
  "  4  refused or not found (core answered 401, 403, 404 or 409; an unknown workload or NodePool)\n";
