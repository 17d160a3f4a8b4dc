#!/usr/bin/env node
// The `wave` command line. Parses the command, hands the rest to the config parser, and turns
// every failure into one line on stderr and the exit code of errors.ts's exitCode() (a stack only
// with --verbose).
import { configHelp, parseConfig } from "../config/config.ts";
import { commands, type Command } from "./commands.ts";
import { UsageError, exitCode, exitCodesHelp } from "./errors.ts";
import { tuneHeapForService } from "./heap.ts";
import type { Io } from "./types.ts";
import { version } from "./version.ts";

export { UsageError, version };
export type { Io } from "./types.ts";

function help(list: readonly Command[]): string {
  return [
    "wave — dashboard, node warmup and spot placement for Karpenter clusters",
    "",
    "Usage: wave <command> [flags]",
    "",
    "Commands:",
    ...list.map((c) => `  ${c.name.padEnd(12)} ${c.summary}`),
    "  version      print Wave's version",
    "  help         this text",
    "",
    "Flags (every command):",
    configHelp(),
    "",
    exitCodesHelp,
  ].join("\n");
}

/** Runs the CLI and returns the process exit code. */
export async function run(argv: string[], io: Io): Promise<number> {
  const [name, ...rest] = argv;
  const verbose = rest.includes("--verbose");
  try {
    if (name === undefined || name === "help" || name === "--help" || name === "-h") {
      io.out(help(commands) + "\n");
      return 0;
    }
    if (name === "version" || name === "--version") {
      io.out(`wave ${version()} (node ${process.version})\n`);
      return 0;
    }
    const command = commands.find((c) => c.name === name);
    if (!command) throw new UsageError(`unknown command "${name}" (see wave --help)`);
    if (rest.includes("--help")) {
      io.out(
        `wave ${command.name} — ${command.summary}\n\n${command.usage ?? ""}${configHelp(command.globals)}\n`,
      );
      return 0;
    }
    const { config, positionals, flags, given } = parseConfig(rest, io.env, command.options);
    // Before the command's modules load and its first allocation burst (heap.ts).
    if (command.service === true) tuneHeapForService();
    return await command.run({ config, positionals, flags, io, given });
  } catch (err) {
    io.err(`wave: ${(err as Error).message}\n`);
    if (verbose && err instanceof Error && err.stack) io.err(err.stack + "\n");
    return exitCode(err);
  }
}

/** Process entry: wires signals and stdio, sets the exit code. */
export async function main(): Promise<void> {
  const ac = new AbortController();
  for (const sig of ["SIGINT", "SIGTERM"] as const) process.once(sig, () => ac.abort(new Error(sig)));
  const code = await run(process.argv.slice(2), {
    out: (t) => process.stdout.write(t),
    err: (t) => process.stderr.write(t),
    env: process.env,
    signal: ac.signal,
    tty: process.stdout.isTTY,
  });
  process.exitCode = code;
}

if (import.meta.main) await main();
