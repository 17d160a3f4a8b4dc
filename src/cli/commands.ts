// The CLI's commands. A command is listed only once the capability behind it exists.
// Each command's implementation is imported when it runs, not here: `wave agent` then loads the
// agent's dependencies only, not core's API, store and simulator (≈ 100 MiB less resident
// memory per process; bench/pipeline/README.md), and `wave --help` loads none of them.
import type { ExtraOptions, WaveConfig } from "../config/config.ts";
import type { Io } from "./main.ts";
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
  /** A long-running process: its heap is tuned for a small resident size (heap.ts). */
  service?: boolean;
  run(ctx: CommandContext): Promise<number>;
}

const whatif: Command = {
  name: "whatif",
  summary: "replay a workload on the simulator under a candidate spot/warmup policy vs the current one",
  usage:
    "Usage: wave whatif (--spot-threshold SPEC | --warmup SPEC)... [--workload FILE.json] [--duration 1h] [flags]\n\n" +
    "Replays a workload on the simulated cluster twice, under the current policy and under the candidate\n" +
    "(the current one with these flags' changes), same seed, and prints cost and pod start latency side by side.\n\n" +
    "  --spot-threshold kind/ns/name=N[:Prefer|Require][:PCT]  first N pods on-demand (+ PCT % of the rest);\n" +
    "                               several: comma-separated\n" +
    "  --warmup pool=NAME,enabled|disabled[,maxWarmNodes=N,ttl=10m,cooldown=5m,maxCostPerHour=USD]\n" +
    "                               warm capacity for a NodePool; several pools: separated by semicolons\n" +
    "  --workload FILE.json         recorded workload (default: the embedded scenario, whose current policy\n" +
    "                               is deployment/shop/api=3:Prefer and no warmup)\n" +
    "  --duration 1h                simulated time, at most 24h\n" +
    "  --catalog aws|kwok           instance types and prices: EC2-like (default) or the KWOK provider's\n" +
    "  --boot-delay 60s             NodeClaim launch → node Ready\n" +
    "  --spot-interruption-rate 0.02  interruptions per spot node per hour\n" +
    "  --seed 7                     PRNG seed, the same for both runs\n" +
    "  --json                       the whole report (policies and results) as JSON\n\n" +
    '  A recorded workload is JSON: { nodePools?, deployments, steps: [{ at: "5m", deployment: "ns/name",\n' +
    "  replicas }], policies?: { spot: [SpotPolicy], warmup: { pool: WarmupPolicy } } } (policies = current).\n" +
    "  Example: wave whatif --spot-threshold deployment/shop/api=0 --warmup 'pool=general,maxWarmNodes=1'\n\n" +
    "Global flags:\n",
  options: {
    duration: { type: "string" },
    workload: { type: "string" },
    "spot-threshold": { type: "string" },
    warmup: { type: "string" },
    catalog: { type: "string" },
    "boot-delay": { type: "string" },
    "spot-interruption-rate": { type: "string" },
    seed: { type: "string" },
    json: { type: "boolean" },
  },
  run: async (ctx) => (await import("./whatif.ts")).whatifCommand(ctx),
};

export const commands: readonly Command[] = [
  {
    name: "start",
    service: true,
    summary: "run every component of Wave in one process (simulated cluster without a kubeconfig)",
    usage: "Usage: wave start [--kubeconfig FILE] [--simulate] [flags]\n\n",
    run: async (ctx) => (await import("./start.ts")).startCommand(ctx),
  },
  ...policyCommands,
  whatif,
  // The Helm chart's processes (deploy/helm/wave/README.md: the environment each one gets).
  {
    name: "agent",
    service: true,
    summary: "stream cluster state to core (in-cluster; leader-elected)",
    usage:
      "Usage: wave agent --core-address https://HOST:PORT --agent-token T [--agent-tls-dir DIR] [flags]\n\n",
    run: async (ctx) => (await import("./agent-component.ts")).agentCommand(ctx),
  },
  {
    name: "core",
    service: true,
    summary: "history, dashboard API + UI, agent ingest, warmup controller (leader-elected)",
    usage: "Usage: wave core --grpc-tls-dir DIR --agent-token T --admin-token A --viewer-token V [flags]\n\n",
    run: async (ctx) => (await import("./core-component.ts")).coreCommand(ctx),
  },
  {
    name: "webhook",
    service: true,
    summary: "spot-placement admission webhook (policies pulled from core)",
    usage: "Usage: wave webhook --spot-policies-url URL --viewer-token V --webhook-tls-dir DIR [flags]\n\n",
    run: async (ctx) => (await import("./webhook-component.ts")).webhookCommand(ctx),
  },
  {
    name: "cleanup",
    summary: "remove what Wave wrote into the cluster (Helm post-delete hook)",
    usage:
      "Usage: wave cleanup [--wait-for-pods SELECTOR] [--namespace NS]\n\n" +
      "  --wait-for-pods <selector>   first wait until no pod in the namespace matches\n\n",
    options: { "wait-for-pods": { type: "string" } },
    run: async (ctx) => (await import("./cleanup.ts")).cleanupCommand(ctx),
  },
];
