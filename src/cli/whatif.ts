// `wave whatif`: replay a workload on the simulated cluster under the current policy and under a
// candidate (spot thresholds, warmup), side by side: average cost per hour and pod start
// latency. Flag parsing and the report are pure; the replay runs on a FakeClock, so an hour of
// simulated cluster time takes seconds.
import { readFile } from "node:fs/promises";
import { parseDuration } from "../karpenter/duration.ts";
import { parsePolicy } from "../policy/validate-warmup.ts";
import { DEFAULT_POLICY, type WarmupPolicy } from "../policy/warmup.ts";
import { workloadKey, workloadNameOfKey, type SpotPolicy } from "../policy/spot.ts";
import { PolicyValidationError, parseSpotPolicies } from "../policy/validate-spot.ts";
import {
  candidatePolicy,
  replay,
  type PodStartStats,
  type ReplayPolicy,
  type ReplayResult,
} from "../sim/replay.ts";
import type { WhatifProgressDto, WhatifReportDto, WhatifRequestDto } from "../dashboard/dto.ts";
import { SCENARIO_DEPLOYMENTS, SCENARIO_POOLS, SCENARIO_SPOT_POLICY } from "../sim/scenario.ts";
import type { Deployment } from "../objects/kube.ts";
import type { CatalogName } from "../sim/catalog.ts";
import {
  WorkloadError,
  generatedWorkload,
  parseRecordedWorkload,
  recordedWorkload,
  type WorkloadSeed,
} from "../sim/workload.ts";
import type { CommandContext } from "./types.ts";
import { CoreError, RefusedError, UnreachableError, UsageError, coreAnswerError } from "./errors.ts";
import { coreTarget, parseWorkloadRef, spotBody, warmupBody } from "./policies.ts";

const MAX_DURATION_MS = 24 * 3_600_000;

export interface WhatifPlan {
  /** The connected cluster (core's state and history), or an offline workload. */
  source: "cluster" | "offline";
  /** Offline: simulated time. */
  durationMs: number;
  /** Cluster: history replayed, back from now. */
  windowMs: number;
  /** undefined = the generated (embedded) scenario. */
  workloadFile: string | undefined;
  catalog: CatalogName;
  bootDelayMs: number;
  /** Undefined on the cluster: its own rate over the window. */
  spotInterruptionRate: number | undefined;
  seed: number;
  json: boolean;
  candidate: Candidate;
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

/** The candidate a `wave whatif spot|warmup …` names, in core's API shapes and as policies. */
export interface Candidate {
  /** The request body's candidate part (`POST …/whatif`). */
  body: Pick<WhatifRequestDto, "spot" | "warmup">;
  spot: SpotPolicy[];
  warmup: Record<string, WarmupPolicy>;
}

/**
 * `spot KIND/NS/NAME --threshold N [--strategy …] [--percent-above-base P]` or `warmup POOL
 * [--max-warm-nodes N] [--ttl SECONDS] …`: the same positionals and flags as `wave spot set` and
 * `wave warmup set`, checked by the same validators as core's API.
 */
export function parseCandidate(positionals: readonly string[], flags: CommandContext["flags"]): Candidate {
  const [what, target, extra] = positionals;
  if (extra !== undefined) throw new UsageError(`wave whatif: unexpected "${extra}"`);
  if (what === "spot") {
    const workload = parseWorkloadRef(target);
    const body = spotBody(flags);
    try {
      const spot = parseSpotPolicies([{ ...body, workload }]);
      return { body: { spot }, spot, warmup: {} };
    } catch (err) {
      if (!(err instanceof PolicyValidationError)) throw err;
      throw new UsageError(
        `wave whatif spot: ${err.problems.map((p) => p.replace(/^policies\[0\]\./, "")).join("; ")}`,
      );
    }
  }
  if (what === "warmup") {
    if (!target || !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(target))
      throw new UsageError(
        "wave whatif warmup: name the NodePool (wave whatif warmup general --max-warm-nodes 1)",
      );
    const body = warmupBody(flags);
    const r = parsePolicy(body);
    if (!r.ok) throw new UsageError(`wave whatif warmup ${target}: ${r.errors.join("; ")}`);
    return { body: { warmup: { [target]: body } }, spot: [], warmup: { [target]: r.policy } };
  }
  throw new UsageError(
    'wave whatif: name the candidate: "spot KIND/NAMESPACE/NAME --threshold N …" or "warmup NODEPOOL --max-warm-nodes N …" (see wave whatif --help)',
  );
}

export function parseWhatifFlags(positionals: readonly string[], flags: CommandContext["flags"]): WhatifPlan {
  const str = (name: string): string | undefined => {
    const v = flags[name];
    if (v === undefined) return undefined;
    if (typeof v !== "string" || v.trim() === "") throw new UsageError(`--${name} needs a value`);
    return v;
  };
  const candidate = parseCandidate(positionals, flags);
  const workloadFile = str("workload");
  const offline = workloadFile !== undefined || flags.scenario === true;
  if (workloadFile !== undefined && flags.scenario === true)
    throw new UsageError("--scenario and --workload name two workloads: give one");
  const catalog = str("catalog") ?? "aws";
  if (catalog !== "aws" && catalog !== "kwok")
    throw new UsageError(`--catalog must be aws or kwok, got "${catalog}"`);
  const rateText = str("spot-interruption-rate");
  const rate = rateText === undefined ? undefined : Number(rateText);
  if (rate !== undefined && (!Number.isFinite(rate) || rate < 0 || rate > 60))
    throw new UsageError(
      `--spot-interruption-rate expects interruptions per spot node per hour (0-60), got "${rateText ?? ""}"`,
    );
  const seedText = str("seed");
  if (seedText !== undefined && !/^\d{1,9}$/.test(seedText))
    throw new UsageError(`--seed expects a whole number, got "${seedText}"`);
  if (!offline)
    for (const f of ["duration", "catalog"])
      if (flags[f] !== undefined)
        throw new UsageError(
          `--${f} is for --scenario or --workload; on the cluster, --window sets how far back to replay`,
        );
  if (offline && flags.window !== undefined)
    throw new UsageError("--window is for the connected cluster; --duration sets a scenario's length");
  return {
    source: offline ? "offline" : "cluster",
    durationMs: durationFlag(flags.duration, "duration", 3_600_000, MAX_DURATION_MS),
    windowMs: durationFlag(flags.window, "window", MAX_DURATION_MS, MAX_DURATION_MS),
    workloadFile,
    catalog,
    bootDelayMs: durationFlag(flags["boot-delay"], "boot-delay", 60_000, 3_600_000),
    spotInterruptionRate: rate ?? (offline ? 0.02 : undefined),
    seed: seedText === undefined ? 7 : Number(seedText),
    json: flags.json === true,
    candidate,
    spot: candidate.spot,
    warmup: candidate.warmup,
  };
}

/**
 * A candidate for something the workload does not have would change nothing and report "0 %":
 * name what is there instead. Only Deployments are simulated.
 */
export function checkTargets(
  plan: Pick<WhatifPlan, "spot" | "warmup">,
  workload: { deployments: readonly string[]; pools: readonly string[] },
): void {
  for (const p of plan.spot) {
    const ref = `${p.workload.namespace}/${p.workload.name}`;
    if (p.workload.kind !== "Deployment" || !workload.deployments.includes(ref))
      throw new UsageError(
        `spot: the workload has no ${p.workload.kind.toLowerCase()}/${ref} (deployments: ${workload.deployments.map((d) => `deployment/${d}`).join(", ")})`,
      );
  }
  for (const pool of Object.keys(plan.warmup)) {
    if (!workload.pools.includes(pool))
      throw new UsageError(
        `warmup: the workload has no NodePool ${pool} (NodePools: ${workload.pools.join(", ")})`,
      );
  }
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
  let spotPolicies;
  try {
    spotPolicies = parseSpotPolicies(spot);
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
  return { spot: spotPolicies, warmup: out };
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

const HOURS_PER_MONTH = 730;
const usd = (v: number): string => `$${v.toFixed(v >= 100 ? 0 : v >= 10 ? 2 : 3)}`;
const pct = (a: number, b: number): string =>
  a === 0 ? (b === 0 ? "0 %" : "n/a") : `${b >= a ? "+" : ""}${(((b - a) / a) * 100).toFixed(1)} %`;

/** Latency cells; a run in which no pod started has no latency (not 0 s). */
function latencyRow(label: string, c: ReplayResult, k: ReplayResult, pick: "p50Ms" | "p95Ms"): string[] {
  const cell = (r: ReplayResult): string =>
    r.podStart.count === 0 ? "—" : `${(r.podStart[pick] / 1000).toFixed(1)} s`;
  const both = c.podStart.count > 0 && k.podStart.count > 0;
  return [label, cell(c), cell(k), both ? pct(c.podStart[pick], k.podStart[pick]) : ""];
}

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
  const rows: string[][] = [
    ["", "current", "candidate", "change"],
    ["cost/h (average)", usd(c.costPerHour), usd(k.costPerHour), pct(c.costPerHour, k.costPerHour)],
    [
      `cost/month (${HOURS_PER_MONTH} h)`,
      usd(c.costPerHour * HOURS_PER_MONTH),
      usd(k.costPerHour * HOURS_PER_MONTH),
      k.costPerHour === c.costPerHour
        ? "0"
        : `${k.costPerHour > c.costPerHour ? "+" : "-"}${usd(Math.abs(k.costPerHour - c.costPerHour) * HOURS_PER_MONTH)}`,
    ],
    latencyRow("pod start p50", c, k, "p50Ms"),
    latencyRow("pod start p95", c, k, "p95Ms"),
    ["pods started", String(c.podStart.count), String(k.podStart.count), ""],
    ["node-hours spot", c.nodeHours.spot.toFixed(2), k.nodeHours.spot.toFixed(2), ""],
    ["node-hours on-demand", c.nodeHours.onDemand.toFixed(2), k.nodeHours.onDemand.toFixed(2), ""],
    ["NodeClaims created", String(c.nodeClaimsCreated), String(k.nodeClaimsCreated), ""],
    ["spot interruptions", String(c.spotInterruptions), String(k.spotInterruptions), ""],
    ["warmup pods preempted", String(c.preemptions), String(k.preemptions), ""],
    ["pods pending at end", String(c.pendingAtEnd), String(k.pendingAtEnd), ""],
  ];
  const deployments = [
    ...new Set([...Object.keys(c.podStartByDeployment), ...Object.keys(k.podStartByDeployment)]),
  ].sort();
  const p = (st: PodStartStats | undefined, pick: "p50Ms" | "p95Ms"): string =>
    st === undefined || st.count === 0 ? "—" : `${(st[pick] / 1000).toFixed(1)} s`;
  const byDeployment = [
    ["pod start by deployment", "p50 now", "p95 now", "p50 cand.", "p95 cand.", "pods"],
    ...deployments.map((d) => {
      const a = c.podStartByDeployment[d];
      const b = k.podStartByDeployment[d];
      return [
        d,
        p(a, "p50Ms"),
        p(a, "p95Ms"),
        p(b, "p50Ms"),
        p(b, "p95Ms"),
        `${a?.count ?? 0}/${b?.count ?? 0}`,
      ];
    }),
  ];
  return [
    `wave whatif: ${r.workload}, ${(r.durationMs / 60_000).toFixed(0)} min simulated, ${r.catalog} catalog, ` +
      `node boot ${r.bootDelayMs / 1000}s, seed ${r.seed}`,
    "",
    ...table(rows),
    "",
    ...table(byDeployment),
    "",
    `current:   ${describePolicy(r.current.policy)}`,
    `candidate: ${describePolicy(r.candidate.policy)}`,
    "Pod start: creation → Running of workload pods (pods still pending at the end are not in it).",
    "Simulated: Karpenter batching, cheapest offering, consolidation, spot interruptions (see docs/simulator.md).",
  ].join("\n");
}

/** Rows as aligned text: the first column left-aligned, the others right-aligned. */
function table(rows: readonly (readonly string[])[]): string[] {
  const cols = Math.max(...rows.map((row) => row.length));
  const w = Array.from({ length: cols }, (_, i) => Math.max(...rows.map((row) => row[i]?.length ?? 0)));
  return rows.map((row) =>
    row
      .map((cell, i) => (i === 0 ? cell.padEnd(w[i] ?? 0) : cell.padStart(w[i] ?? 0)))
      .join("   ")
      .trimEnd(),
  );
}

interface LoadedWorkload {
  seed: WorkloadSeed;
  current: ReplayPolicy;
  name: string;
  /** "namespace/name" of every Deployment. */
  deployments: string[];
  pools: string[];
}

const refOf = (d: Deployment): string => `${d.metadata.namespace ?? "default"}/${d.metadata.name ?? ""}`;

async function loadWorkload(file: string | undefined): Promise<LoadedWorkload> {
  if (file === undefined)
    return {
      seed: generatedWorkload(),
      current: GENERATED_CURRENT,
      name: "generated workload",
      deployments: SCENARIO_DEPLOYMENTS.map(refOf),
      pools: SCENARIO_POOLS.map((p) => p.metadata.name ?? ""),
    };
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
    return {
      seed: recordedWorkload(w),
      current: recordedPolicy(json),
      name: `recorded workload ${file}`,
      deployments: w.deployments.map(refOf),
      pools: w.nodePools.map((p) => p.metadata.name ?? ""),
    };
  } catch (err) {
    if (err instanceof WorkloadError) throw new UsageError(`--workload ${file}: ${err.message}`);
    throw err;
  }
}

export async function whatifCommand(ctx: CommandContext): Promise<number> {
  const plan = parseWhatifFlags(ctx.positionals, ctx.flags);
  if (plan.source === "cluster") return clusterWhatifCommand(ctx, plan);
  const wl = await loadWorkload(plan.workloadFile);
  checkTargets(plan, wl);
  const candidate = candidatePolicy(wl.current, plan);
  const run = (policy: ReplayPolicy): Promise<ReplayResult> =>
    replay({
      workload: wl.seed,
      policy,
      durationMs: plan.durationMs,
      seed: plan.seed,
      catalog: plan.catalog,
      bootDelayMs: plan.bootDelayMs,
      spotInterruptionRate: plan.spotInterruptionRate ?? 0.02,
    });
  let report: WhatifReport;
  try {
    report = {
      workload: wl.name,
      durationMs: plan.durationMs,
      catalog: plan.catalog,
      bootDelayMs: plan.bootDelayMs,
      seed: plan.seed,
      current: { policy: wl.current, result: await run(wl.current) },
      candidate: { policy: candidate, result: await run(candidate) },
    };
  } catch (err) {
    // The workload does not fit the catalog (e.g. AWS instance categories on --catalog kwok).
    if (err instanceof WorkloadError) throw new UsageError(`${wl.name}: ${err.message}`);
    throw err;
  }
  ctx.io.out((plan.json ? JSON.stringify(report, null, 2) : formatReport(report)) + "\n");
  return 0;
}

/** On the connected cluster: core replays its own last hours (POST /api/v1/clusters/{id}/whatif). */
async function clusterWhatifCommand(ctx: CommandContext, plan: WhatifPlan): Promise<number> {
  const clusterId = ctx.config.clusterId;
  const body: WhatifRequestDto = {
    ...plan.candidate.body,
    windowHours: plan.windowMs / 3_600_000,
    bootDelaySeconds: Math.round(plan.bootDelayMs / 1000),
    seed: plan.seed,
    ...(plan.spotInterruptionRate === undefined ? {} : { spotInterruptionRate: plan.spotInterruptionRate }),
  };
  const report = await streamWhatif(ctx, `/api/v1/clusters/${encodeURIComponent(clusterId)}/whatif`, body);
  ctx.io.out((plan.json ? JSON.stringify(report, null, 2) : formatClusterReport(report, plan)) + "\n");
  return 0;
}

/** "about 1 min 20 s left" */
function left(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return "";
  const s = Math.max(1, Math.ceil(ms / 1000));
  return ` · about ${s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`} left`;
}

/** One line of the what-if's progress: a bar, the share of the replays done and the time left. */
export function progressLine(p: WhatifProgressDto, width = 24): string {
  if (p.state === "queued")
    return `what-if queued${p.position > 0 ? ` (${p.position} ahead)` : " (next)"}${left(p.etaMs)}`;
  const f = Math.min(1, Math.max(0, p.fraction));
  const filled = Math.round(f * width);
  return `replaying [${"#".repeat(filled)}${"-".repeat(width - filled)}] ${Math.floor(f * 100)} %${left(p.etaMs)}`;
}

/** Server-sent events from a fetch body: [event, data] as each frame completes. */
export async function* sseEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<[string, unknown]> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let at: number;
    while ((at = buf.indexOf("\n\n")) >= 0) {
      const frame = buf.slice(0, at);
      buf = buf.slice(at + 2);
      const event = /^event: (.*)$/m.exec(frame)?.[1];
      const data = frame
        .split("\n")
        .filter((l) => l.startsWith("data: "))
        .map((l) => l.slice(6))
        .join("\n");
      if (event && data) yield [event, JSON.parse(data) as unknown];
    }
  }
}

/**
 * POSTs the what-if asking for its progress as server-sent events, drawing a progress bar on
 * stderr (redrawn in place on a terminal, a line per 10 % otherwise); Ctrl-C closes the request,
 * which cancels the replay in core.
 */
async function streamWhatif(
  ctx: CommandContext,
  path: string,
  body: WhatifRequestDto,
): Promise<WhatifReportDto> {
  const { server, token } = coreTarget(ctx, "viewer");
  let res: Response;
  try {
    res = await fetch(`${server}${path}`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        accept: "text/event-stream",
      },
      body: JSON.stringify(body),
      signal: AbortSignal.any([ctx.io.signal, AbortSignal.timeout(30 * 60_000)]),
    });
  } catch (err) {
    throw new UnreachableError(
      `cannot reach Wave core at ${server} (${(err as Error).message}); set --server`,
    );
  }
  const type = res.headers.get("content-type") ?? "";
  if (!res.ok || !type.startsWith("text/event-stream") || !res.body) {
    const text = await res.text();
    const json = text ? (JSON.parse(text) as { message?: string }) : undefined;
    if (res.ok) return json as WhatifReportDto;
    const retry = res.headers.get("retry-after");
    throw coreAnswerError(
      res.status,
      `${json?.message ?? res.statusText}${retry && !json?.message ? ` (retry in ${retry} s)` : ""}`,
    );
  }
  const tty = process.stderr.isTTY;
  let shown = "";
  let lastTenth = -1;
  const clear = (): void => {
    if (tty && shown) ctx.io.err("\r\x1b[K");
    shown = "";
  };
  try {
    for await (const [event, data] of sseEvents(res.body)) {
      if (event === "progress") {
        const p = data as WhatifProgressDto;
        const line = progressLine(p);
        if (tty) {
          ctx.io.err(`\r\x1b[K${line}`);
          shown = line;
        } else {
          const tenth = p.state === "queued" ? -1 : Math.floor(p.fraction * 10);
          if (tenth !== lastTenth || (p.state === "queued" && shown !== line)) ctx.io.err(`${line}\n`);
          lastTenth = tenth;
          shown = line;
        }
      } else if (event === "result") {
        clear();
        return data as WhatifReportDto;
      } else if (event === "error") {
        clear();
        const e = data as { statusCode: number; message: string };
        throw coreAnswerError(e.statusCode, e.message);
      }
    }
  } catch (err) {
    clear();
    if (err instanceof UsageError || err instanceof RefusedError || err instanceof CoreError) throw err;
    throw new UsageError(`the what-if stream from ${server} broke off (${(err as Error).message})`);
  }
  throw new UsageError(`the what-if stream from ${server} ended without a result`);
}

const share = (v: number): string => `${(v * 100).toFixed(1)} %`;
const points = (a: number, b: number): string => {
  const d = (b - a) * 100;
  return Math.abs(d) < 0.05 ? "0" : `${d > 0 ? "+" : ""}${d.toFixed(1)} pt`;
};
const seconds = (s: { count: number; p50Ms: number; p95Ms: number }, pick: "p50Ms" | "p95Ms"): string =>
  s.count === 0 ? "—" : `${(s[pick] / 1000).toFixed(1)} s`;

const signed = (v: number): string => `${v >= 0 ? "+" : ""}${(v * 100).toFixed(1)} %`;

/** The current policy's replay beside what core recorded over the same window: judge the model first. */
export function recordedLines(r: WhatifReportDto): string[] {
  const rec = r.recorded;
  if (!rec) return ["recorded: core has no series for this window to compare the replay with"];
  const rows: string[][] = [
    ["model check (current policy)", "replayed", "recorded", "error"],
    ["cost/h (average)", usd(r.current.costPerHour), usd(rec.costPerHour), signed(rec.fidelity.costError)],
    ...Object.entries(rec.pools).map(([pool, p]) => [
      `NodePool ${pool} nodes (average)`,
      (r.current.pools?.[pool]?.nodes ?? 0).toFixed(1),
      p.nodes.toFixed(1),
      rec.fidelity.poolNodesError[pool] === undefined ? "" : signed(rec.fidelity.poolNodesError[pool]),
    ]),
  ];
  return ["", ...table(rows)];
}

/** The cluster what-if side by side; the changed workloads' placement now. */
export function formatClusterReport(r: WhatifReportDto, plan: Pick<WhatifPlan, "spot" | "warmup">): string {
  const c = r.current;
  const k = r.candidate;
  const lat = (label: string, pick: "p50Ms" | "p95Ms"): string[] => [
    label,
    seconds(c.podStart, pick),
    seconds(k.podStart, pick),
    c.podStart.count > 0 && k.podStart.count > 0 ? pct(c.podStart[pick], k.podStart[pick]) : "",
  ];
  const split = (w: { onDemand: number; spot: number; pending: number } | undefined): string =>
    w === undefined ? "—" : `${w.onDemand} / ${w.spot}${w.pending > 0 ? ` (+${w.pending} pending)` : ""}`;
  const changed = plan.spot.map((p) => workloadKey(p.workload));
  const rows: string[][] = [
    ["", "current", "candidate", "change"],
    ["cost/h (average)", usd(c.costPerHour), usd(k.costPerHour), pct(c.costPerHour, k.costPerHour)],
    [
      `cost/month (${HOURS_PER_MONTH} h)`,
      usd(c.costPerMonth),
      usd(k.costPerMonth),
      k.costPerMonth === c.costPerMonth
        ? "0"
        : `${k.costPerMonth > c.costPerMonth ? "+" : "-"}${usd(Math.abs(k.costPerMonth - c.costPerMonth))}`,
    ],
    ["spot share (node-hours)", share(c.spotShare), share(k.spotShare), points(c.spotShare, k.spotShare)],
    lat("pod start p50", "p50Ms"),
    lat("pod start p95", "p95Ms"),
    ["pods started", String(c.podStart.count), String(k.podStart.count), ""],
    ["cost/h now", usd(c.now.costPerHour), usd(k.now.costPerHour), pct(c.now.costPerHour, k.now.costPerHour)],
    [
      "nodes now (on-demand / spot)",
      `${c.now.nodes.onDemand} / ${c.now.nodes.spot}`,
      `${k.now.nodes.onDemand} / ${k.now.nodes.spot}`,
      "",
    ],
    ...changed.map((w) => [
      `${workloadNameOfKey(w)} pods (on-demand / spot)`,
      split(c.now.workloads[w]),
      split(k.now.workloads[w]),
      "",
    ]),
    // The NodePools whose cost the candidate changes.
    ...[...new Set([...Object.keys(c.now.pools), ...Object.keys(k.now.pools)])]
      .sort()
      .filter((p) => Math.abs((c.now.pools[p]?.costPerHour ?? 0) - (k.now.pools[p]?.costPerHour ?? 0)) > 1e-9)
      .map((p) => {
        const a = c.now.pools[p]?.costPerHour ?? 0;
        const b = k.now.pools[p]?.costPerHour ?? 0;
        return [`NodePool ${p} cost/h now`, usd(a), usd(b), pct(a, b)];
      }),
    ["spot interruptions", String(c.spotInterruptions), String(k.spotInterruptions), ""],
    ["pods pending at end", String(c.pendingAtEnd), String(k.pendingAtEnd), ""],
  ];
  const hours = (r.to - r.from) / 3_600_000;
  return [
    `wave whatif: cluster ${r.clusterId}, ${new Date(r.from).toISOString()} → now replayed (${hours.toFixed(1)} h, ` +
      `${r.historyBuckets} history buckets, ${r.workloads.length} workloads), ${r.catalog} catalog, ` +
      `node boot ${r.bootDelayMs / 1000}s, ${r.spotInterruptionRate.toFixed(3)} interruptions per spot node-hour`,
    "",
    ...table(rows),
    "",
    `current:   ${describePolicy(c.policy)}`,
    `candidate: ${describePolicy(k.policy)}`,
    ...recordedLines(r),
    ...(r.notes ?? []).map((n) => `note: ${n}`),
    ...(r.skipped.length > 0
      ? [`not replayed: ${r.skipped.map((s) => `${s.workload} (${s.reason})`).join(", ")}`]
      : []),
    'cost/h and spot share: averages over the replayed window; "now": where it ends (the cluster now, under each policy).',
    `Simulated in ${(r.tookMs / 1000).toFixed(1)} s (see docs/simulator.md).`,
  ].join("\n");
}
