// The CLI's commands. A command is listed only once the capability behind it exists.
import type { ExtraOptions, WaveConfig } from "../config/config.ts";
import type { Io } from "./main.ts";
import { startCommand } from "./start.ts";
import { policyCommands } from "./policies.ts";

export interface CommandContext {
  config: WaveConfig;
  positionals: string[];
  /** The command's own flags (declared in `options`). */
  flags: Record<string, string | boolean | undefined>;
  io: Io;
}

export interface Command {
  name: string;
  summary: string;
  usage?: string;
  options?: ExtraOptions;
  run(ctx: CommandContext): Promise<number>;
}

export const commands: readonly Command[] = [
  {
    name: "start",
    summary: "run every component of Wave in one process (simulated cluster without a kubeconfig)",
    usage: "Usage: wave start [--kubeconfig FILE] [--simulate] [flags]\n\n",
    run: (ctx) => startCommand(ctx),
  },
  ...policyCommands,
];
