// `wave whatif`: replay a workload on the simulated cluster under the current policy and under a
// candidate (spot thresholds, warmup), side by side: average cost per hour and pod start
// latency. Flag parsing and the report are pure; the replay runs on a FakeClock, so an hour of
// simulated cluster time takes seconds.
import { readFile } from "node:fs/promises";
import { parseDuration } from "../karpenter/duration.ts";
import { DEFAULT_POLICY, parsePolicy, type WarmupPolicy } from "../warmup/policy.ts";
import { PolicyValidationError, parsePolicySet, workloadKey, type SpotPolicy } from "../webhook/policy.ts";
import { replay, type ReplayPolicy, type ReplayResult } from "../sim/replay.ts";
import { SCENARIO_SPOT_POLICY } from "../sim/scenario.ts";
import type { CatalogName } from "../sim/catalog.ts";
import {
  WorkloadError,
  generatedWorkload,
  parseRecordedWorkload,
  recordedWorkload,
  type WorkloadSeed,
} from "../sim/workload.ts";
import type { Command, CommandContext } from "./commands.ts";
import { UsageError } from "./errors.ts";
import { parseWorkloadRef } from "./policies.ts";

const MAX_DURATION_MS = 24 * 3_600_000;

export interface WhatifPlan {
  durationMs: number;
  /** undefined = the generated (embedded) scenario. */
  workloadFile: string | undefined;
  catalog: CatalogName;
  bootDelayMs: number;
  spotInterruptionRate: number;
  seed: number;
  json: boolean;
  /** Candidate changes, applied over the current policy. */
  spot: SpotPolicy[];
  warmup: Record<string, WarmupPolicy>;
}

/** A Go-style duration in ms, or null when it does not parse (or is "Never"). */
function tryDuration(v: string): number | null {
  try {
    return parseDuration(v);
  } catch {
    return null;
  }
}

function durationFlag(v: string | boolean | undefined, name: string, fallback: number, max: number): number {
  if (v === undefined) return fallback;
  const ms = typeof v === "string" ? tryDuration(v) : null;
  if (ms === null || ms <= 0 || ms > max)
    throw new UsageError(
      `--${name} expects a duration like 30s, 45m or 1h (at most ${max / 3_600_000}h), got "${String(v)}"`,
    );
  return ms;
}

/**
 * "deployment/shop/api=5:Prefer,deployment/shop/web=2:Require:50" → spot policies (threshold,
 * strategy (default Prefer), optional percentAboveBase).
 */
export function parseSpotThresholds(text: string): SpotPolicy[] {
  const out: SpotPolicy[] = [];
  for (const item of text.split(",").map((s) => s.trim())) {
    const m = /^([^=]+)=(\d+)(?::(prefer|require))?(?::(\d+))?$/i.exec(item);
    if (!m)
      throw new UsageError(
        `--spot-threshold expects kind/namespace/name=N[:Prefer|Require][:percentAboveBase], got "${item}"`,
      );
    const workload = parseWorkloadRef(m[1]);
    const pct = m[4] === undefined ? undefined : Number(m[4]);
    if (pct !== undefined && pct > 100)
      throw new UsageError(`--spot-threshold: percentAboveBase must be 0-100, got ${pct} in "${item}"`);
    const policy: SpotPolicy = {
      workload,
      threshold: Number(m[2]),
      strategy: (m[3] ?? "prefer").toLowerCase() === "require" ? "Require" : "Prefer",
      ...(pct === undefined ? {} : { percentAboveBase: pct }),
    };
    if (out.some((p) => workloadKey(p.workload) === workloadKey(workload)))
      throw new UsageError(`--spot-threshold names ${m[1] ?? ""} twice`);
    out.push(policy);
  }
  return out;
}

const WARMUP_KEYS: Record<string, { field: keyof WarmupPolicy; kind: "int" | "seconds" | "usd" }> = {
  maxwarmnodes: { field: "maxWarmNodes", kind: "int" },
  ttl: { field: "ttlSeconds", kind: "seconds" },
  cooldown: { field: "cooldownSeconds", kind: "seconds" },
  maxcostperhour: { field: "maxCostPerHour", kind: "usd" },
};

/**
 * "pool=general,enabled,maxWarmNodes=2,ttl=10m;pool=batch,disabled" → warmup policy per pool
 * (unset fields from Wave's defaults, validated by the same rules as the API).
 */
export function parseWarmupFlag(text: string): Record<string, WarmupPolicy> {
  const out: Record<string, WarmupPolicy> = {};
  for (const spec of text
    .split(";")
    .map((s) => s.trim())
    .filter((s) => s !== "")) {
    const parts = spec.split(",").map((s) => s.trim());
    const pool = /^pool=([a-z0-9]([-a-z0-9.]*[a-z0-9])?)$/.exec(parts[0] ?? "")?.[1];
    if (pool === undefined)
      throw new UsageError(`--warmup expects pool=NAME,enabled|disabled[,key=value...], got "${spec}"`);
    const input: Record<string, unknown> = { enabled: true };
    for (const part of parts.slice(1)) {
      if (part === "enabled" || part === "disabled") {
        input.enabled = part === "enabled";
        continue;
      }
      const [k = "", v = ""] = part.split("=");
      const def = WARMUP_KEYS[k.toLowerCase()];
      if (!def)
        throw new UsageError(
          `--warmup: unknown setting "${part}" for pool ${pool} (enabled, disabled, maxWarmNodes=N, ttl=10m, cooldown=5m, maxCostPerHour=USD)`,
        );
      if (def.kind === "int") input[def.field] = /^\d+$/.test(v) ? Number(v) : v;
      else if (def.kind === "usd")
        input[def.field] = v === "none" ? null : /^\d+(\.\d+)?$/.test(v) ? Number(v) : v;
      else {
        const ms = tryDuration(v);
        input[def.field] = ms === null ? v : ms / 1000;
      }
    }
    const r = parsePolicy(input);
    if (!r.ok) throw new UsageError(`--warmup pool=${pool}: ${r.errors.join("; ")}`);
    if (pool in out) throw new UsageError(`--warmup names pool ${pool} twice`);
    out[pool] = r.policy;
  }
  return out;
}

export function parseWhatifFlags(flags: CommandContext["flags"]): WhatifPlan {
  const str = (name: string): string | undefined => {
    const v = flags[name];
    if (v === undefined) return undefined;
    if (typeof v !== "string" || v.trim() === "") throw new UsageError(`--${name} needs a value`);
    return v;
  };
  const spotText = str("spot-threshold");
  const warmupText = str("warmup");
  if (spotText === undefined && warmupText === undefined)
    throw new UsageError("nothing to compare: give a candidate --spot-threshold and/or --warmup");
  const catalog = str("catalog") ?? "aws";
  if (catalog !== "aws" && catalog !== "kwok")
    throw new UsageError(`--catalog must be aws or kwok, got "${catalog}"`);
  const rateText = str("spot-interruption-rate");
  const rate = rateText === undefined ? 0.02 : Number(rateText);
  if (!Number.isFinite(rate) || rate < 0 || rate > 60)
    throw new UsageError(
      `--spot-interruption-rate expects interruptions per spot node per hour (0-60), got "${rateText ?? ""}"`,
    );
  const seedText = str("seed");
  if (seedText !== undefined && !/^\d{1,9}$/.test(seedText))
    throw new UsageError(`--seed expects a whole number, got "${seedText}"`);
  return {
    durationMs: durationFlag(flags.duration, "duration", 3_600_000, MAX_DURATION_MS),
    workloadFile: str("workload"),
    catalog,
    bootDelayMs: durationFlag(flags["boot-delay"], "boot-delay", 60_000, 3_600_000),
    spotInterruptionRate: rate,
    seed: seedText === undefined ? 7 : Number(seedText),
    json: flags.json === true,
    spot: spotText === undefined ? [] : parseSpotThresholds(spotText),
    warmup: warmupText === undefined ? {} : parseWarmupFlag(warmupText),
  };
}

/** The candidate: the current policy with the flags' spot policies and warmup pools replacing theirs. */
export function candidatePolicy(
  current: ReplayPolicy,
  plan: Pick<WhatifPlan, "spot" | "warmup">,
): ReplayPolicy {
  const spot = new Map(current.spot.map((p) => [workloadKey(p.workload), p]));
  for (const p of plan.spot) spot.set(workloadKey(p.workload), p);
  return { spot: [...spot.values()], warmup: { ...current.warmup, ...plan.warmup } };
}

/** The generated scenario's policy in force: the embedded default's spot policy, no warmup. */
export const GENERATED_CURRENT: ReplayPolicy = {
  spot: [
    {
      workload: {
        kind: SCENARIO_SPOT_POLICY.kind,
        namespace: SCENARIO_SPOT_POLICY.namespace,
        name: SCENARIO_SPOT_POLICY.name,
      },
      threshold: SCENARIO_SPOT_POLICY.threshold,
      strategy: SCENARIO_SPOT_POLICY.strategy,
    },
  ],
  warmup: {},
};

/** A recorded workload's current policy: its optional `policies: { spot: [...], warmup: {pool: {...}} }`. */
export function recordedPolicy(json: unknown): ReplayPolicy {
  const policies = (json as { policies?: unknown }).policies;
  if (policies === undefined) return { spot: [], warmup: {} };
  if (typeof policies !== "object" || policies === null || Array.isArray(policies))
    throw new WorkloadError("policies: expected { spot: [...], warmup: { pool: {...} } }");
  const { spot = [], warmup = {} } = policies as { spot?: unknown; warmup?: unknown };
  let set;
  try {
    set = parsePolicySet({ apiVersion: "wave.sh/v1alpha1", kind: "SpotPolicySet", policies: spot });
  } catch (err) {
    const why = err instanceof PolicyValidationError ? err.problems.join("; ") : (err as Error).message;
    throw new WorkloadError(`policies.spot: ${why}`);
  }
  if (typeof warmup !== "object" || warmup === null || Array.isArray(warmup))
    throw new WorkloadError("policies.warmup: expected an object of pool → policy");
  const out: Record<string, WarmupPolicy> = {};
  for (const [pool, p] of Object.entries(warmup)) {
    const r = parsePolicy(p, DEFAULT_POLICY);
    if (!r.ok) throw new WorkloadError(`policies.warmup.${pool}: ${r.errors.join("; ")}`);
    out[pool] = r.policy;
  }
  return { spot: set.policies, warmup: out };
}

function describePolicy(p: ReplayPolicy): string {
  const spot = p.spot.length
    ? p.spot
        .map(
          (s) =>
            `${s.workload.kind.toLowerCase()}/${s.workload.namespace}/${s.workload.name}=${s.threshold}:${s.strategy}` +
            (s.percentAboveBase ? `:${s.percentAboveBase}%` : ""),
        )
        .join(", ")
    : "none";
  const pools = Object.entries(p.warmup);
  const warm = pools.length
    ? pools
        .map(([pool, w]) =>
          w.enabled ? `${pool} (max ${w.maxWarmNodes} warm, ttl ${w.ttlSeconds}s)` : `${pool} (disabled)`,
        )
        .join(", ")
    : "none";
  return `spot ${spot}; warmup ${warm}`;
}

const secs = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
const pct = (a: number, b: number): string =>
  a === 0 ? (b === 0 ? "0 %" : "n/a") : `${b >= a ? "+" : ""}${(((b - a) / a) * 100).toFixed(1)} %`;

export interface WhatifReport {
  workload: string;
  durationMs: number;
  catalog: CatalogName;
  bootDelayMs: number;
  seed: number;
  current: { policy: ReplayPolicy; result: ReplayResult };
  candidate: { policy: ReplayPolicy; result: ReplayResult };
}

/** The side-by-side table. */
export function formatReport(r: WhatifReport): string {
  const c = r.current.result;
  const k = r.candidate.result;
  const rows: [string, string, string, string][] = [
    ["", "current", "candidate", "change"],
    [
      "cost/h (average)",
      `$${c.costPerHour.toFixed(3)}`,
      `$${k.costPerHour.toFixed(3)}`,
      pct(c.costPerHour, k.costPerHour),
    ],
    [
      "pod start p50",
      secs(c.podStart.p50Ms),
      secs(k.podStart.p50Ms),
      pct(c.podStart.p50Ms, k.podStart.p50Ms),
    ],
    [
      "pod start p95",
      secs(c.podStart.p95Ms),
      secs(k.podStart.p95Ms),
      pct(c.podStart.p95Ms, k.podStart.p95Ms),
    ],
    ["pods started", String(c.podStart.count), String(k.podStart.count), ""],
    ["node-hours spot", c.nodeHours.spot.toFixed(2), k.nodeHours.spot.toFixed(2), ""],
    ["node-hours on-demand", c.nodeHours.onDemand.toFixed(2), k.nodeHours.onDemand.toFixed(2), ""],
    ["NodeClaims created", String(c.nodeClaimsCreated), String(k.nodeClaimsCreated), ""],
    ["spot interruptions", String(c.spotInterruptions), String(k.spotInterruptions), ""],
    ["pods pending at end", String(c.pendingAtEnd), String(k.pendingAtEnd), ""],
  ];
  const w = [0, 1, 2, 3].map((i) => Math.max(...rows.map((row) => row[i]?.length ?? 0)));
  const line = (row: string[]): string =>
    row
      .map((cell, i) => (i === 0 ? cell.padEnd(w[i] ?? 0) : cell.padStart(w[i] ?? 0)))
      .join("   ")
      .trimEnd();
  return [
    `wave whatif: ${r.workload}, ${(r.durationMs / 60_000).toFixed(0)} min simulated, ${r.catalog} catalog, ` +
      `node boot ${r.bootDelayMs / 1000}s, seed ${r.seed}`,
    "",
    ...rows.map(line),
    "",
    `current:   ${describePolicy(r.current.policy)}`,
    `candidate: ${describePolicy(r.candidate.policy)}`,
    "Simulated: Karpenter batching, cheapest offering, consolidation, spot interruptions (see docs/simulator.md).",
  ].join("\n");
}

async function loadWorkload(
  file: string | undefined,
): Promise<{ seed: WorkloadSeed; current: ReplayPolicy; name: string }> {
  if (file === undefined)
    return { seed: generatedWorkload(), current: GENERATED_CURRENT, name: "generated workload" };
  let json: unknown;
  try {
    json = JSON.parse(await readFile(file, "utf8"));
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new UsageError(
      `--workload ${file}: ${e.code ? `cannot read it (${e.code})` : `not valid JSON (${e.message})`}`,
    );
  }
  try {
    const w = parseRecordedWorkload(json);
    return { seed: recordedWorkload(w), current: recordedPolicy(json), name: `recorded workload ${file}` };
  } catch (err) {
    if (err instanceof WorkloadError) throw new UsageError(`--workload ${file}: ${err.message}`);
    throw err;
  }
}

export async function whatifCommand(ctx: CommandContext): Promise<number> {
  const plan = parseWhatifFlags(ctx.flags);
  const wl = await loadWorkload(plan.workloadFile);
  const candidate = candidatePolicy(wl.current, plan);
  const run = (policy: ReplayPolicy): Promise<ReplayResult> =>
    replay({
      workload: wl.seed,
      policy,
      durationMs: plan.durationMs,
      seed: plan.seed,
      catalog: plan.catalog,
      bootDelayMs: plan.bootDelayMs,
      spotInterruptionRate: plan.spotInterruptionRate,
    });
  const report: WhatifReport = {
    workload: wl.name,
    durationMs: plan.durationMs,
    catalog: plan.catalog,
    bootDelayMs: plan.bootDelayMs,
    seed: plan.seed,
    current: { policy: wl.current, result: await run(wl.current) },
    candidate: { policy: candidate, result: await run(candidate) },
  };
  ctx.io.out((plan.json ? JSON.stringify(report, null, 2) : formatReport(report)) + "\n");
  return 0;
}

export const whatif: Command = {
  name: "whatif",
  summary: "replay a workload on the simulator under a candidate spot/warmup policy vs the current one",
  usage:
    "Usage: wave whatif [--duration 1h] [--workload FILE.json] [--spot-threshold kind/ns/name=N[:Prefer|Require][:pct]]\n" +
    "                   [--warmup pool=NAME,enabled|disabled[,maxWarmNodes=N,ttl=10m,cooldown=5m,maxCostPerHour=USD]]\n" +
    "                   [--catalog aws|kwok] [--boot-delay 60s] [--spot-interruption-rate 0.02] [--seed N] [--json]\n\n" +
    "  Several spot policies: separate them with commas; several warmup pools: with semicolons.\n" +
    "  Without --workload the embedded scenario is replayed (current policy: deployment/shop/api=3:Prefer).\n" +
    "  A recorded workload is JSON: { nodePools?, deployments, steps: [{ at, deployment: ns/name, replicas }],\n" +
    "  policies?: { spot: [SpotPolicy], warmup: { pool: WarmupPolicy } } } — policies is the current policy.\n\n",
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
  run: (ctx) => whatifCommand(ctx),
};
