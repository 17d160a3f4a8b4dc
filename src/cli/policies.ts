// `wave spot …` and `wave warmup …`: set policies through core's API (admin token), so users
// never edit their workloads' YAML. Argument parsing is pure; the HTTP shell is thin.
import { userInfo } from "node:os";
import type { SpotPolicyResource } from "../objects/policy-crds.ts";
import { readInstance } from "./instance.ts";
import type { Command, CommandContext } from "./types.ts";
import { DEFAULTS } from "../config/config.ts";
import type { WarmupPolicy } from "../policy/warmup.ts";
import { workloadName } from "../policy/spot.ts";
import { outputFormat, outputHelp, outputOption, render, table, type Column } from "./output.ts";
import { RefusedError, UnreachableError, UsageError, coreAnswerError } from "./errors.ts";

const KINDS: Record<string, "Deployment" | "StatefulSet" | "ReplicaSet"> = {
  deployment: "Deployment",
  deploy: "Deployment",
  statefulset: "StatefulSet",
  sts: "StatefulSet",
  replicaset: "ReplicaSet",
  rs: "ReplicaSet",
};

export interface WorkloadRef {
  kind: "Deployment" | "StatefulSet" | "ReplicaSet";
  namespace: string;
  name: string;
}

/** "deployment/shop/api" → { kind: "Deployment", namespace: "shop", name: "api" }. */
export function parseWorkloadRef(text: string | undefined): WorkloadRef {
  const parts = (text ?? "").split("/");
  const [kind, namespace, name] = parts;
  const k = KINDS[(kind ?? "").toLowerCase()];
  if (parts.length !== 3 || !k || !namespace || !name)
    throw new UsageError(
      `expected a workload as kind/namespace/name (kind: deployment, statefulset or replicaset), got "${text ?? ""}"`,
    );
  return { kind: k, namespace, name };
}

function intFlag(flags: CommandContext["flags"], name: string): number | undefined {
  const v = flags[name];
  if (v === undefined) return undefined;
  if (typeof v !== "string" || !/^\d+$/.test(v))
    throw new UsageError(`--${name} expects a whole number (0 or more), got "${String(v)}"`);
  return Number(v);
}

/** The PUT body of a spot policy from the command's flags. */
export function spotBody(flags: CommandContext["flags"]): Record<string, unknown> {
  const threshold = intFlag(flags, "threshold");
  if (threshold === undefined)
    throw new UsageError("--threshold N is required (the first N pods run on-demand)");
  const strategy = String(flags.strategy ?? "prefer").toLowerCase();
  if (strategy !== "prefer" && strategy !== "require")
    throw new UsageError(`--strategy must be prefer or require, got "${strategy}"`);
  const pct = intFlag(flags, "percent-above-base");
  const repair = flags.repair === undefined ? undefined : String(flags.repair).toLowerCase();
  const modes: Record<string, boolean | "dry-run"> = { on: true, off: false, "dry-run": "dry-run" };
  if (repair !== undefined && !(repair in modes))
    throw new UsageError(`--repair must be on, off or dry-run, got "${repair}"`);
  return {
    threshold,
    strategy: strategy === "prefer" ? "Prefer" : "Require",
    ...(pct === undefined ? {} : { percentAboveBase: pct }),
    ...(repair === undefined ? {} : { repair: modes[repair] }),
  };
}

/** The PUT body of a warmup policy from the command's flags (unset fields take core's defaults). */
export function warmupBody(flags: CommandContext["flags"]): Record<string, unknown> {
  const body: Record<string, unknown> = { enabled: flags.disable !== true };
  const map: [string, string][] = [
    ["max-warm-nodes", "maxWarmNodes"],
    ["ttl", "ttlSeconds"],
    ["cooldown", "cooldownSeconds"],
  ];
  for (const [flag, key] of map) {
    const v = intFlag(flags, flag);
    if (v !== undefined) body[key] = v;
  }
  const cost = flags["max-cost-per-hour"];
  if (cost !== undefined) {
    const n = Number(cost);
    if (typeof cost !== "string" || !Number.isFinite(n) || n < 0)
      throw new UsageError(`--max-cost-per-hour expects a number of USD, got "${String(cost)}"`);
    body.maxCostPerHour = n;
  }
  if (flags["no-pre-pull"] === true) body.prePull = false;
  return body;
}

/** Core's address and the token for `role`: --server, else the `wave start` on this data directory. */
export function coreTarget(ctx: CommandContext, role: "viewer" | "admin"): { server: string; token: string } {
  // Without --server: the `wave start` running on this data directory (its address and the
  // tokens it generated), else the configured port on this machine.
  const instance = ctx.flags.server === undefined ? readInstance(ctx.config.dataDir) : undefined;
  const server = String(
    ctx.flags.server ?? instance?.apiUrl ?? `http://127.0.0.1:${ctx.config.port}`,
  ).replace(/\/$/, "");
  const admin = ctx.config.adminToken ?? instance?.adminToken;
  const token = role === "viewer" ? (ctx.config.viewerToken ?? admin ?? instance?.viewerToken) : admin;
  if (!token)
    throw new UsageError(
      role === "viewer"
        ? "a token is required: --viewer-token or WAVE_VIEWER_TOKEN"
        : "an admin token is required: --admin-token or WAVE_ADMIN_TOKEN",
    );
  return { server, token };
}

/**
 * One request to core's API. Reads (GET, and POSTs that change nothing, like what-if) go with the
 * viewer token, changes with the admin token.
 */
export async function call(
  ctx: CommandContext,
  method: "GET" | "PUT" | "DELETE" | "POST",
  path: string,
  body?: unknown,
  opts: { role?: "viewer" | "admin"; timeoutMs?: number } = {},
): Promise<unknown> {
  return (await request(ctx, method, path, body, opts)).json;
}

/** `call` with the answer's headers. */
async function request(
  ctx: CommandContext,
  method: "GET" | "PUT" | "DELETE" | "POST",
  path: string,
  body?: unknown,
  opts: { role?: "viewer" | "admin"; timeoutMs?: number } = {},
): Promise<{ json: unknown; headers: Headers }> {
  const { server, token } = coreTarget(ctx, opts.role ?? (method === "GET" ? "viewer" : "admin"));
  let res: Response;
  try {
    res = await fetch(`${server}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        // The audit records changes made from the CLI as such.
        "x-wave-client": "cli",
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(opts.timeoutMs ?? 10_000),
    });
  } catch (err) {
    throw new UnreachableError(
      `cannot reach Wave core at ${server} (${(err as Error).message}); set --server`,
    );
  }
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? (JSON.parse(text) as unknown) : undefined;
  } catch {
    throw coreAnswerError(res.status, `not JSON (${text.slice(0, 80)})`);
  }
  if (!res.ok) {
    const message = (json as { message?: string } | undefined)?.message ?? res.statusText;
    throw coreAnswerError(res.status, message);
  }
  return { json, headers: res.headers };
}

/**
 * Core's id of the cluster the policies are for: --cluster-id, else core's own, which its
 * pre-cluster route names in its successor link (`</api/v1/clusters/ID/policies/…>`).
 */
export async function clusterIdOf(ctx: CommandContext): Promise<string> {
  if (ctx.config.clusterId !== DEFAULTS.clusterId) return ctx.config.clusterId;
  const { headers } = await request(ctx, "GET", "/api/v1/policies/warmup");
  const m = /<\/api\/v1\/clusters\/([^/>]+)\//.exec(headers.get("link") ?? "");
  return m?.[1] ? decodeURIComponent(m[1]) : ctx.config.clusterId;
}

/**
 * Refuses (exit 4) a policy for a workload or NodePool core does not see in the cluster — a typo
 * would otherwise be stored and never apply. With --force: a warning on stderr, and on.
 */
async function checkKnown(
  ctx: CommandContext,
  what: string,
  known: (clusterId: string) => Promise<boolean>,
): Promise<void> {
  coreTarget(ctx, "admin"); // a change needs the admin token: say so before any read
  const clusterId = await clusterIdOf(ctx);
  let ok: boolean;
  try {
    ok = await known(clusterId);
  } catch (err) {
    // 404: core has no state of that cluster (no agent yet), so nothing of it is known.
    if (!(err instanceof RefusedError && err.status === 404)) throw err;
    ok = false;
  }
  if (ok) return;
  const message = `${what} in cluster ${clusterId}`;
  if (ctx.flags.force === true) {
    ctx.io.err(`wave: warning: ${message}; setting its policy anyway (--force)\n`);
    return;
  }
  throw new RefusedError(`${message} (a typo? --force sets it anyway)`);
}

const clusterPath = (id: string, rest: string): string =>
  `/api/v1/clusters/${encodeURIComponent(id)}/${rest}`;

/** A workload core sees pods of (its spot placement view lists each workload with live pods). */
async function workloadKnown(ctx: CommandContext, ref: WorkloadRef, clusterId: string): Promise<boolean> {
  const view = (await call(ctx, "GET", clusterPath(clusterId, "spot-placement"))) as {
    workloads: { workload: WorkloadRef; pods: number }[];
  };
  return view.workloads.some(
    (w) =>
      w.pods > 0 &&
      w.workload.kind === ref.kind &&
      w.workload.namespace === ref.namespace &&
      w.workload.name === ref.name,
  );
}

/** A NodePool of the cluster as core sees it. */
async function poolKnown(ctx: CommandContext, pool: string, clusterId: string): Promise<boolean> {
  const pools = (await call(ctx, "GET", clusterPath(clusterId, "nodepools"))) as { name: string }[];
  return pools.some((p) => p.name === pool);
}

/**
 * The shared flags of the commands that call core's API (their --help): the tokens and where a
 * local `wave start` is found; --cluster-id their usage explains (which cluster's policies).
 */
export const clientGlobals = [
  "admin-token",
  "viewer-token",
  "data-dir",
  "port",
  "log-level",
  "log-format",
  "verbose",
];

const serverOption = { server: { type: "string" as const }, ...outputOption };

/** The flags spotBody reads: `wave spot set` and `wave whatif` take them. */
export const spotPolicyFlags = {
  threshold: { type: "string" },
  strategy: { type: "string" },
  "percent-above-base": { type: "string" },
} as const;

/** The flags warmupBody reads: `wave warmup set` and `wave whatif` take them. */
export const warmupPolicyFlags = {
  disable: { type: "boolean" },
  "max-warm-nodes": { type: "string" },
  ttl: { type: "string" },
  cooldown: { type: "string" },
  "max-cost-per-hour": { type: "string" },
  "no-pre-pull": { type: "boolean" },
} as const;

interface SpotRow {
  workload: { kind: string; namespace: string; name: string };
  threshold: number;
  strategy: string;
  percentAboveBase?: number;
  repair?: boolean | "dry-run";
}

const spotColumns: Column<SpotRow>[] = [
  {
    header: "WORKLOAD",
    value: (p) => workloadName(p.workload),
  },
  { header: "THRESHOLD", value: (p) => String(p.threshold) },
  { header: "STRATEGY", value: (p) => p.strategy },
  { header: "ABOVE-BASE-%", value: (p) => String(p.percentAboveBase ?? 0) },
  {
    header: "REPAIR",
    value: (p) => (p.repair === "dry-run" ? "dry-run" : p.repair === false ? "off" : "on"),
  },
];

interface WarmupRow {
  nodePool: string;
  /** The stored policy's fields the table shows. */
  policy: Omit<WarmupPolicy, "prePullDeadlineSeconds">;
  updatedAt?: number;
}

const warmupColumns: Column<WarmupRow>[] = [
  { header: "NODEPOOL", value: (r) => r.nodePool },
  { header: "ENABLED", value: (r) => String(r.policy.enabled) },
  { header: "MAX-WARM", value: (r) => String(r.policy.maxWarmNodes) },
  { header: "TTL", value: (r) => `${r.policy.ttlSeconds}s` },
  { header: "COOLDOWN", value: (r) => `${r.policy.cooldownSeconds}s` },
  {
    header: "MAX-$/H",
    value: (r) => (r.policy.maxCostPerHour === null ? "-" : String(r.policy.maxCostPerHour)),
  },
  { header: "PRE-PULL", value: (r) => String(r.policy.prePull) },
  {
    header: "UPDATED",
    value: (r) => (r.updatedAt === undefined ? "-" : new Date(r.updatedAt).toISOString().slice(0, 19) + "Z"),
  },
];

/** What `set`/`delete` print: the answer as JSON/YAML, or one line in a table's place. */
function printChange(ctx: CommandContext, answer: unknown, line: string): void {
  const format = outputFormat(ctx.flags, ctx.io.tty === true);
  ctx.io.out(render(format, answer, () => line));
}

/**
 * The cluster's policies on core's API: --cluster-id (WAVE_CLUSTER_ID) names the cluster; without
 * one, core's own cluster (the routes from before policies had a cluster).
 */
const policiesPath = (ctx: CommandContext, rest: string): string =>
  ctx.config.clusterId === DEFAULTS.clusterId
    ? `/api/v1/policies/${rest}`
    : `/api/v1/clusters/${encodeURIComponent(ctx.config.clusterId)}/policies/${rest}`;

export const policyCommands: Command[] = [
  {
    name: "spot",
    summary: "list, set or delete SpotPolicy resources (wave spot set deployment/ns/name --threshold 3)",
    usage:
      "Usage: wave spot list\n       wave spot set KIND/NAMESPACE/NAME --threshold N [--strategy prefer|require] [--percent-above-base P]\n                [--repair on|off|dry-run]  (dry-run: report the evictions it would make, make none)\n                [--force]  (set it though core sees no pod of the workload)\n                [--kubeconfig FILE]  (no --server: apply the SpotPolicy CR to that cluster directly;\n                 --force then takes fields other field managers own)\n       wave spot delete KIND/NAMESPACE/NAME\n  --server URL  core's API (default: the wave start running on --data-dir, else http://127.0.0.1:<port>)\n  --cluster-id ID  the cluster whose policies these are (default: core's own)\n" +
      outputHelp +
      "\n",
    globals: clientGlobals,
    options: {
      ...serverOption,
      ...spotPolicyFlags,
      repair: { type: "string" },
      force: { type: "boolean" },
      kubeconfig: { type: "string" },
    },
    async run(ctx) {
      const [verb, target] = ctx.positionals;
      if (verb === "list") {
        const format = outputFormat(ctx.flags, ctx.io.tty === true);
        const set = (await call(ctx, "GET", policiesPath(ctx, "spot"))) as {
          policies: SpotRow[];
          conflicts?: { policy: string; message: string }[];
        };
        // Under the table, each SpotPolicy not in force: another one on its workload decides.
        const notInForce = (set.conflicts ?? []).map((c) => `\nnot in force: ${c.policy}: ${c.message}`);
        ctx.io.out(render(format, set, () => table(spotColumns, set.policies) + notInForce.join("")));
        return 0;
      }
      if (verb !== "set" && verb !== "delete")
        throw new UsageError('wave spot: expected "list", "set" or "delete"');
      const ref = parseWorkloadRef(target);
      const path = policiesPath(
        ctx,
        `spot/${ref.kind}/${encodeURIComponent(ref.namespace)}/${encodeURIComponent(ref.name)}`,
      );
      if (typeof ctx.flags.kubeconfig === "string" && (verb !== "set" || ctx.flags.server !== undefined))
        throw new UsageError(
          "wave spot: --kubeconfig applies to `wave spot set` without --server (list, delete and --server go through core)",
        );
      if (verb === "set" && typeof ctx.flags.kubeconfig === "string") {
        // No core: the SpotPolicy is server-side applied straight to the cluster (ADR 0018).
        // --context is honoured (issue 42: it wrote to the file's current context), and where the
        // write goes is said before it is made.
        const { object: out, target: where } = await applySpotDirect(
          { path: ctx.flags.kubeconfig, context: ctx.config.context },
          ref,
          spotBody(ctx.flags),
          ctx.flags.force === true,
          (t) => ctx.io.err(`wave spot: applying to ${t}\n`),
        );
        printChange(
          ctx,
          out,
          `applied SpotPolicy ${ref.namespace}/${out.metadata.name ?? ""} to ${where} (field manager wave-console)`,
        );
        return 0;
      }
      if (verb === "set") {
        const body = spotBody(ctx.flags);
        await checkKnown(ctx, `core sees no pod of ${target ?? ""}`, (id) => workloadKnown(ctx, ref, id));
        const set = (await call(ctx, "PUT", path, body)) as SpotRow;
        printChange(ctx, set, table(spotColumns, [set]));
      } else {
        await call(ctx, "DELETE", path);
        printChange(ctx, { deleted: true }, `deleted the spot policy of ${target ?? ""}`);
      }
      return 0;
    },
  },
  {
    name: "warmup",
    summary:
      "list, set or delete WarmupPolicy resources per NodePool (wave warmup set general --max-warm-nodes 1)",
    usage:
      "Usage: wave warmup list\n       wave warmup set NODEPOOL [--disable] [--max-warm-nodes N] [--ttl SECONDS] [--cooldown SECONDS] [--max-cost-per-hour USD] [--no-pre-pull]\n                  [--force]  (set it though core sees no such NodePool in the cluster)\n       wave warmup delete NODEPOOL\n  --server URL  core's API (default: the wave start running on --data-dir, else http://127.0.0.1:<port>)\n  --cluster-id ID  the cluster whose policies these are (default: core's own)\n" +
      outputHelp +
      "\n",
    globals: clientGlobals,
    options: {
      ...serverOption,
      ...warmupPolicyFlags,
      force: { type: "boolean" },
    },
    async run(ctx) {
      const [verb, pool] = ctx.positionals;
      if (verb === "list") {
        const format = outputFormat(ctx.flags, ctx.io.tty === true);
        const rows = (await call(ctx, "GET", policiesPath(ctx, "warmup"))) as WarmupRow[];
        ctx.io.out(render(format, rows, () => table(warmupColumns, rows)));
        return 0;
      }
      if (verb !== "set" && verb !== "delete")
        throw new UsageError('wave warmup: expected "list", "set" or "delete"');
      if (!pool) throw new UsageError("wave warmup: name the NodePool");
      const path = policiesPath(ctx, `warmup/${encodeURIComponent(pool)}`);
      if (verb === "set") {
        const body = warmupBody(ctx.flags);
        await checkKnown(ctx, `no NodePool ${pool}`, (id) => poolKnown(ctx, pool, id));
        const set = (await call(ctx, "PUT", path, body)) as WarmupRow;
        printChange(ctx, set, table(warmupColumns, [set]));
      } else {
        await call(ctx, "DELETE", path);
        printChange(ctx, { deleted: true }, `deleted the warmup policy of NodePool ${pool}`);
      }
      return 0;
    },
  },
];

/**
 * `wave spot set … --kubeconfig FILE` without a server: the SpotPolicy CR server-side applied to
 * the cluster directly, with the same field manager (wave-console), stamp and conflict answer as
 * an edit through core.
 */
async function applySpotDirect(
  kubeconfig: { path: string; context: string | undefined },
  ref: WorkloadRef,
  body: Record<string, unknown>,
  force: boolean,
  announce: (target: string) => void,
): Promise<{ object: SpotPolicyResource; target: string }> {
  // Loaded only here: `wave --help` and the other commands load no component (main.test.ts).
  const [{ applyPolicyEdit }, { spotPolicyFrom }, { editRefusal, spotPolicyName, spotPolicyResource }, kc] =
    await Promise.all([
      import("../agent/policy-apply.ts"),
      import("../api/routes/policies.ts"),
      import("../console/policy-crs.ts"),
      import("../kube/clientnode/kubeconfig.ts"),
    ]);
  let policy;
  try {
    policy = spotPolicyFrom(ref, body);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const kube = kc.clientFromKubeconfig(kubeconfig.path, kubeconfig.context);
  announce(kube.target);
  const existing = (await kube.list("SpotPolicy", { namespace: ref.namespace })).items;
  const name = spotPolicyName(ref, existing);
  const object = spotPolicyResource(policy, name, {
    subject: `cli:${userInfo().username}`,
    via: "cli",
    at: Date.now(),
  });
  const r = await applyPolicyEdit(kube, {
    id: 0,
    kind: "SpotPolicy",
    namespace: ref.namespace,
    name,
    op: "apply",
    object,
    force,
  });
  if (r.outcome === "applied") return { object: r.object as SpotPolicyResource, target: kube.target };
  const refusal = editRefusal(r);
  const err = new RefusedError(refusal.message);
  err.status = refusal.status;
  throw err;
}
