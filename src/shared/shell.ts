// Copyable shell commands (the console's `kubectl patch` lines): every argument goes through one
// quoting rule, so a name or value with `$(…)`, backticks, `;`, quotes or a newline stays one
// argument and runs nothing when pasted into a POSIX shell (issue 42: names streamed by a
// compromised agent made lines that ran commands).

/** Characters that mean nothing to a POSIX shell: such an argument is left as it is (readable). */
const PLAIN = /^[A-Za-z0-9_./:=@%+,-]+$/;

/** One argument for a POSIX shell: as it is when plain, else single-quoted (' as '\''). */
export function shellArg(s: string): string {
  return PLAIN.test(s) ? s : `'${s.replaceAll("'", "'\\''")}'`;
}

/** A command line of `argv`, each argument quoted by shellArg. */
export function shellCommand(argv: readonly string[]): string {
  return argv.map(shellArg).join(" ");
}
