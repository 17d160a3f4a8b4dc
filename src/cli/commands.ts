// The CLI's commands. A command is listed only once the capability behind it exists.
// Each command's implementation is imported when it runs, not here: `wave agent` then loads the
// agent's dependencies only, not core's API, store and simulator (≈ 100 MiB less resident
// memory per process; bench/pipeline/README.md), and `wave --help` loads none of them.
import { clientGlobals, policyCommands, spotPolicyFlags, warmupPolicyFlags } from "./policies.ts";
import { outputHelp, outputOption } from "./output.ts";
import type { Command } from "./types.ts";

export type { Command, CommandContext } from "./types.ts";

/** Every command: logging and stacks. */
const logGlobals = ["log-level", "log-format", "verbose"] as const;
/** Commands that talk to the apiserver. */
const kubeGlobals = ["kubeconfig", "context", "namespace"] as const;

const whatif: Command = {
  name: "whatif",
  summary:
    "replay the cluster's last 24 h on the simulator under a candidate spot/warmup policy vs its current one",
  usage:
    "Usage: wave whatif spot KIND/NAMESPACE/NAME --threshold N [--strategy prefer|require] [--percent-above-base P]\n" +
    "       wave whatif warmup NODEPOOL [--disable] [--max-warm-nodes N] [--ttl SECONDS] [--cooldown SECONDS]\n" +
    "                                   [--max-cost-per-hour USD]\n" +
    "       (the candidate takes the flags of wave spot set / wave warmup set)\n\n" +
    "Core takes the connected cluster's NodePools, workloads, prices, current policies and the last\n" +
    "--window of pods per workload, replays them on the simulator under the current policies and under\n" +
    "the candidate (same seed), and prints cost/h, cost/month, spot share and pod start p50/p95 side by\n" +
    "side, and where the changed workload's pods run at the end. Nothing in the cluster changes.\n\n" +
    "  --window 24h                 history replayed, back from now (at most 24h)\n" +
    "  --boot-delay 60s             NodeClaim launch → node Ready in the simulator\n" +
    "  --spot-interruption-rate R   per spot node per hour (default: the cluster's own over the window)\n" +
    "  --seed 7                     PRNG seed, the same for both runs\n" +
    "  --json                       the whole report as JSON\n" +
    "  --server URL                 core's API (default: the wave start running on --data-dir)\n" +
    "  --cluster-id ID              which of core's clusters (default: core's own)\n\n" +
    "Without a cluster: --scenario (the built-in scenario, current policy deployment/shop/api=3:Prefer)\n" +
    "or --workload FILE.json (a recorded workload), with --duration 1h, --catalog aws|kwok and the flags above.\n" +
    '  A recorded workload is JSON: { nodePools?, deployments, steps: [{ at: "5m", deployment: "ns/name",\n' +
    "  replicas }], policies?: { spot: [SpotPolicy], warmup: { pool: WarmupPolicy } } } (policies = current).\n\n" +
    "  Example: wave whatif spot deployment/shop/api --threshold 2 --strategy prefer\n\n" +
    "Global flags:\n",
  options: {
    server: { type: "string" },
    ...spotPolicyFlags,
    ...warmupPolicyFlags,
    window: { type: "string" },
    scenario: { type: "boolean" },
    duration: { type: "string" },
    workload: { type: "string" },
    catalog: { type: "string" },
    "boot-delay": { type: "string" },
    "spot-interruption-rate": { type: "string" },
    seed: { type: "string" },
    json: { type: "boolean" },
  },
  globals: clientGlobals,
  run: async (ctx) => (await import("./whatif.ts")).whatifCommand(ctx),
};

const status: Command = {
  name: "status",
  summary:
    "the cluster's figures (nodes, $/h, spot ratio, pending, warm, blocked) and policies' target vs actual",
  usage:
    "Usage: wave status [--server URL] [--cluster-id ID] [-o table|json|yaml]\n\n" +
    "Nodes, cost per hour and month, spot ratio, pending pods, warm nodes and blocked consolidation\n" +
    "savings, then each spot policy's on-demand/spot target vs actual and each warmup policy's warm\n" +
    "nodes — the figures the console shows, read from core's API with the viewer token.\n\n" +
    "  --server URL     core's API (default: the wave start running on --data-dir, else http://127.0.0.1:<port>)\n" +
    "  --cluster-id ID  which of core's clusters (default: core's own)\n" +
    outputHelp +
    "\n",
  options: { server: { type: "string" }, ...outputOption },
  globals: clientGlobals,
  run: async (ctx) => (await import("./status.ts")).statusCommand(ctx),
};

const completion: Command = {
  name: "completion",
  summary: "print a shell completion script (source <(wave completion bash), or zsh)",
  usage: "Usage: wave completion bash|zsh\n\n",
  globals: [],
  run: async (ctx) => {
    const { completionScript } = await import("./completion.ts");
    ctx.io.out(completionScript(ctx.positionals[0], commands));
    return 0;
  },
};

export const commands: readonly Command[] = [
  {
    name: "start",
    service: true,
    summary: "run every component of Wave in one process (simulated cluster without a kubeconfig)",
    usage:
      "Usage: wave start [--kubeconfig FILE] [--simulate] [--rotate-tokens] [flags]\n\n" +
      "  --rotate-tokens   new API tokens (the data dir keeps the generated ones across restarts)\n\n",
    options: { "rotate-tokens": { type: "boolean" } },
    run: async (ctx) => (await import("./start.ts")).startCommand(ctx),
  },
  ...policyCommands,
  status,
  whatif,
  // The Helm chart's processes (deploy/helm/wave/README.md: the environment each one gets).
  {
    name: "agent",
    service: true,
    summary:
      "stream cluster state to core; the warmup controller (WarmupPolicy resources) (in-cluster; leader-elected)",
    usage:
      "Usage: wave agent --core-address https://HOST:PORT --agent-token T [--agent-tls-dir DIR] [flags]\n\n",
    globals: [
      ...kubeGlobals,
      ...logGlobals,
      "cluster-id",
      "host",
      "pod-name",
      "agent-token",
      "agent-lease",
      "core-address",
      "agent-tls-dir",
      "metrics-port",
      "warmup-namespace",
      "warmup-policy-source",
    ],
    run: async (ctx) => (await import("./agent-component.ts")).agentCommand(ctx),
  },
  {
    name: "core",
    service: true,
    summary: "history, dashboard API + UI, agent ingest; policy edits go to the agent, which applies the CRs",
    usage: "Usage: wave core --grpc-tls-dir DIR --agent-token T --admin-token A --viewer-token V [flags]\n\n",
    run: async (ctx) => (await import("./core-component.ts")).coreCommand(ctx),
  },
  {
    name: "webhook",
    service: true,
    summary: "spot-placement admission webhook (SpotPolicy resources through its own informer)",
    usage:
      "Usage: wave webhook --webhook-tls-dir DIR --viewer-token V [flags]\n" +
      "       (--spot-policy-source core --spot-policies-url URL: core's set instead; deprecated)\n\n",
    globals: [
      ...kubeGlobals,
      ...logGlobals,
      "host",
      "pod-name",
      "viewer-token",
      "spot-policy-source",
      "spot-policies-url",
      "webhook-tls-dir",
      "webhook-port",
      "webhook-fallback",
      "webhook-deadline-ms",
      "public-metrics",
      "spot-policy-interval-ms",
      "spot-policy-watch",
      "spot-repair",
      "spot-repair-dry-run",
      "spot-ledger-namespace",
      "spot-prefer-fallback-ms",
    ],
    run: async (ctx) => (await import("./webhook-component.ts")).webhookCommand(ctx),
  },
  {
    name: "cleanup",
    summary: "remove what Wave wrote into the cluster (Helm post-delete hook)",
    usage:
      "Usage: wave cleanup [--wait-for-pods SELECTOR] [--namespace NS]\n\n" +
      "  --wait-for-pods <selector>   first wait until no pod in the namespace matches\n\n",
    options: { "wait-for-pods": { type: "string" } },
    globals: [...kubeGlobals, ...logGlobals, "agent-lease", "warmup-namespace", "spot-ledger-namespace"],
    run: async (ctx) => (await import("./cleanup.ts")).cleanupCommand(ctx),
  },
  completion,
];
