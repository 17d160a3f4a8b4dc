// The CLI's commands. A command is listed only once the capability behind it exists.
import type { ExtraOptions, WaveConfig } from "../config/config.ts";
import type { Io } from "./main.ts";
import { startCommand } from "./start.ts";
import { policyCommands } from "./policies.ts";
import { whatif } from "./whatif.ts";
import { agentCommand, cleanupCommand, coreCommand, webhookCommand } from "./components.ts";

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
  whatif,
  // The Helm chart's processes (deploy/helm/wave/README.md: the environment each one gets).
  {
    name: "agent",
    summary: "stream cluster state to core (in-cluster; leader-elected)",
    usage:
      "Usage: wave agent --core-address https://HOST:PORT --agent-token T [--agent-tls-dir DIR] [flags]\n\n",
    run: (ctx) => agentCommand(ctx),
  },
  {
    name: "core",
    summary: "history, dashboard API + UI, agent ingest, warmup controller (leader-elected)",
    usage: "Usage: wave core --grpc-tls-dir DIR --agent-token T --admin-token A --viewer-token V [flags]\n\n",
    run: (ctx) => coreCommand(ctx),
  },
  {
    name: "webhook",
    summary: "spot-placement admission webhook (policies pulled from core)",
    usage: "Usage: wave webhook --spot-policies-url URL --viewer-token V --webhook-tls-dir DIR [flags]\n\n",
    run: (ctx) => webhookCommand(ctx),
  },
  {
    name: "cleanup",
    summary: "remove what Wave wrote into the cluster (Helm post-delete hook)",
    usage:
      "Usage: wave cleanup [--wait-for-pods SELECTOR] [--namespace NS]\n\n" +
      "  --wait-for-pods <selector>   first wait until no pod in the namespace matches\n\n",
    options: { "wait-for-pods": { type: "string" } },
    run: (ctx) => cleanupCommand(ctx),
  },
];
