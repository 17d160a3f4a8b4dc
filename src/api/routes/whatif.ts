// What-if on a connected cluster: POST a candidate spot/warmup policy; core gathers what it
// knows of the cluster — NodePools, each workload's pods (its template), its current policies,
// the last 24 h of pods per workload and its spot interruption rate — and the simulator replays
// that window under the current and the candidate policy (src/sim/cluster-whatif.ts, injected
// by the composition root as `run`). Viewers may ask: nothing is changed in the cluster.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { ClusterHub } from "../../core/hub/hub.ts";
import type { WhatifProgressDto, WhatifReportDto, WhatifRequestDto } from "../../dashboard/dto.ts";
import { sseFrame } from "../sse.ts";
import { workloadTemplates } from "../../dashboard/figures/workload-pods.ts";
import { parsePolicy } from "../../policy/validate-warmup.ts";
import type { WarmupPolicy } from "../../policy/warmup.ts";
import type { SpotPolicy } from "../../policy/spot.ts";
import { parseSpotPolicies, PolicyValidationError } from "../../policy/validate-spot.ts";
import type { ApiPlugin } from "../app.ts";
import { spotPolicySet } from "./policies.ts";
import { clusterIdParam, errorSchema } from "./schemas.ts";
import { bodySchema, whatifReportSchema } from "./whatif-schemas.ts";

export { whatifReportSchema };

const HOUR = 3_600_000;

type State = NonNullable<ReturnType<ClusterHub["get"]>>["state"];

/** What the route hands the simulator (src/sim/cluster-whatif.ts ClusterWhatifInput). */
export interface WhatifInput {
  nodePools: ReturnType<State["nodePools"]>;
  nodes: ReturnType<State["nodes"]>;
  pods: ReturnType<State["pods"]>;
  /** The last pod core saw of each workload (src/dashboard/figures/workload-pods.ts). */
  templates?: ReturnType<State["pods"]>;
  history: readonly { workload: string; ts: number; pods: number }[];
  now: number;
  windowMs: number;
  current: { spot: SpotPolicy[]; warmup: Record<string, WarmupPolicy> };
  changes: { spot: SpotPolicy[]; warmup: Record<string, WarmupPolicy> };
  spotInterruptionRate: number;
  bootDelayMs: number;
  /** The cluster's control-loop period over the window (observedCadence); the replay ticks no more often. */
  cadence?: { from: number; stepMs: number }[];
  /** When each NodePool's template changed (observedTemplateChanges): the replay drifts it then. */
  templateChanges?: { nodePool: string; at: number }[];
  seed?: number;
  /** Core's per-pool series points over the window (the recorded day the current policy is set beside). */
  recorded?: { ts: number; resolutionMs: number; nodePool: string; nodes: number; costPerHour: number }[];
}

/** One replay job: its cluster (one replay per cluster at a time), cancellation and progress. */
export interface WhatifJobOptions {
  key: string;
  signal: AbortSignal;
  onProgress?: (p: WhatifProgressDto) => void;
}

/**
 * Runs the replays (core: src/sim/whatif-pool.ts, in worker threads). Errors carry the HTTP
 * status to answer as `statusCode` (400 a candidate the cluster cannot take, 429 with
 * `retryAfterSeconds` a full queue, 499 cancelled, 503 a worker that died).
 */
export type WhatifRunner = (
  input: WhatifInput,
  job: WhatifJobOptions,
) => Promise<Omit<WhatifReportDto, "clusterId" | "tookMs">>;

export interface WhatifDeps {
  hub: ClusterHub;
  run: WhatifRunner;
  now: () => number;
  /** Seconds to wait when no replay can be queued now (429 before any work); undefined: go ahead. */
  busy?: () => number | undefined;
}

interface RunError {
  statusCode?: number;
  retryAfterSeconds?: number;
  message?: string;
}

const errorName = (status: number): string =>
  status === 429
    ? "too_many_requests"
    : status === 503
      ? "unavailable"
      : status >= 500
        ? "internal"
        : "bad_request";

/** A body the schema let through but the policies' own validators refuse: 400 with the reason. */
class BadCandidate extends Error {
  statusCode = 400;
}

/** The body's candidate, validated by the same rules as the policy routes (and `wave spot|warmup set`). */
export function parseCandidate(body: WhatifRequestDto): WhatifInput["changes"] {
  const spotIn = body.spot ?? [];
  const warmupIn = body.warmup ?? {};
  if (spotIn.length === 0 && Object.keys(warmupIn).length === 0)
    throw new BadCandidate("nothing to compare: give spot policies and/or warmup policies to try");
  let spot: SpotPolicy[];
  try {
    spot = parseSpotPolicies(spotIn);
  } catch (err) {
    if (!(err instanceof PolicyValidationError)) throw err;
    throw new BadCandidate(
      `invalid spot candidate: ${err.problems.map((p) => p.replace(/^policies/, "spot")).join("; ")}`,
    );
  }
  const warmup: Record<string, WarmupPolicy> = {};
  for (const [pool, p] of Object.entries(warmupIn)) {
    const r = parsePolicy(p);
    if (!r.ok) throw new BadCandidate(`invalid warmup candidate for ${pool}: ${r.errors.join("; ")}`);
    warmup[pool] = r.policy;
  }
  return { spot, warmup };
}

export function whatifRoutes(deps: WhatifDeps): ApiPlugin {
  // Each cluster's last pod per workload is remembered from its first batch on (a workload
  // between runs when a what-if is asked still has a template).
  deps.hub.onChange((id) => {
    const c = deps.hub.get(id);
    if (c) workloadTemplates(c.state);
  });
  return (app: FastifyInstance) => {
    app.post<{ Params: { id: string }; Body: WhatifRequestDto }>(
      "/api/v1/clusters/:id/whatif",
      {
        config: { role: "viewer" },
        schema: {
          summary:
            "Replays the cluster's last hours (its workloads, NodePools, prices, pods per workload) on the " +
            "simulator under its current policies and under the candidate in the body: cost/h, cost/month, " +
            "spot share, pod start p50/p95, and each workload's placement now, side by side",
          params: { type: "object", required: ["id"], properties: { id: clusterIdParam } },
          body: bodySchema,
          response: {
            200: whatifReportSchema,
            400: errorSchema,
            404: errorSchema,
            429: errorSchema,
            503: errorSchema,
          },
        },
      },
      async (req, reply) => {
        const c = deps.hub.get(req.params.id);
        if (!c?.info)
          return reply
            .code(404)
            .send({ error: "not_found", message: `no cluster with id "${req.params.id}"` });
        const changes = parseCandidate(req.body);
        // A full queue is refused before any work (the store's day of pods per workload).
        const retry = deps.busy?.();
        if (retry !== undefined)
          return reply
            .code(429)
            .header("retry-after", String(retry))
            .send({
              error: "too_many_requests",
              message: `what-if replays are all busy and the queue is full; try again in ${retry} s`,
            });
        const input = await whatifInput(deps, c, req.body, changes);
        const started = Date.now();
        const ac = new AbortController();
        // A client that goes away (closed tab, Cancel, Ctrl-C) cancels its replay: the worker is freed.
        const gone = (): void => {
          if (!reply.raw.writableEnded) ac.abort();
        };
        reply.raw.on("close", gone);
        const job = { key: c.id, signal: ac.signal };
        if (!(req.headers.accept ?? "").includes("text/event-stream")) {
          try {
            const report = await deps.run(input, job);
            return { clusterId: c.id, ...report, tookMs: Date.now() - started };
          } catch (err) {
            const e = err as RunError;
            if (e.statusCode === 429 && e.retryAfterSeconds !== undefined)
              void reply.header("retry-after", String(e.retryAfterSeconds));
            throw err;
          } finally {
            reply.raw.off("close", gone);
          }
        }
        // Streamed: progress events (a bar with an estimate), then the report or the error.
        await streamWhatif(req, reply, {
          run: (onProgress) => deps.run(input, { ...job, onProgress }),
          clusterId: c.id,
          started,
          gone,
        });
        return reply;
      },
    );
  };
}

/** The answer as server-sent events: `progress` while the replay runs, then `result` or `error`. */
async function streamWhatif(
  req: FastifyRequest,
  reply: FastifyReply,
  o: {
    run: (
      onProgress: (p: WhatifProgressDto) => void,
    ) => Promise<Omit<WhatifReportDto, "clusterId" | "tookMs">>;
    clusterId: string;
    started: number;
    gone: () => void;
  },
): Promise<void> {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache, no-transform",
    "x-accel-buffering": "no",
  });
  const send = (event: string, data: unknown): void => {
    if (!res.writableEnded && !res.destroyed) res.write(sseFrame(event, data));
  };
  try {
    const report = await o.run((p) => send("progress", p));
    send("result", { clusterId: o.clusterId, ...report, tookMs: Date.now() - o.started });
  } catch (err) {
    const e = err as RunError;
    const status =
      e.statusCode !== undefined && e.statusCode >= 400 && e.statusCode < 600 ? e.statusCode : 500;
    if (status >= 500 && status !== 503) req.log.error({ err }, "what-if failed");
    send("error", {
      statusCode: status,
      error: errorName(status),
      message: status === 500 ? `internal error (request ${req.id})` : (e.message ?? "failed"),
      ...(e.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: e.retryAfterSeconds }),
    });
  } finally {
    reply.raw.off("close", o.gone);
    res.end();
  }
}

/** What the simulator needs of the cluster: its state, policies, recorded history and pods. */
async function whatifInput(
  deps: WhatifDeps,
  c: NonNullable<ReturnType<ClusterHub["get"]>>,
  body: WhatifRequestDto,
  changes: WhatifInput["changes"],
): Promise<WhatifInput> {
  const store = deps.hub.store;
  const now = deps.now();
  const windowMs = Math.round((body.windowHours ?? 24) * HOUR);
  const range = { clusterId: c.id, from: now - windowMs, to: now + 1 };
  const [spotRows, warmupRows, history, series] = await Promise.all([
    store.listPolicies(c.id, "spot"),
    store.listPolicies(c.id, "warmup"),
    store.workloadPods(range),
    store.series(range),
  ]);
  const recorded: NonNullable<WhatifInput["recorded"]> = [];
  for (const r of series)
    if (r.kind === "point")
      recorded.push({
        ts: r.ts,
        resolutionMs: r.resolutionMs,
        nodePool: r.nodePool,
        nodes: r.nodes,
        costPerHour: r.costPerHour,
      });
  const warmup: Record<string, WarmupPolicy> = {};
  for (const r of warmupRows) {
    const p = parsePolicy(r.value);
    if (p.ok) warmup[r.key] = p.policy;
  }
  const disruptions = await store.disruptions({ ...range, limit: LIFECYCLE_LIMIT });
  const rate = body.spotInterruptionRate ?? (await observedInterruptionRate(deps.hub, range, disruptions));
  const templateChanges = observedTemplateChanges(disruptions);
  const lifecycle = await store.lifecycle({ ...range, limit: LIFECYCLE_LIMIT });
  // The cluster's own boot time (launch → initialized) unless the body sets one.
  const bootMs =
    body.bootDelaySeconds === undefined
      ? (observedBootMs(lifecycle) ?? DEFAULT_BOOT_MS)
      : body.bootDelaySeconds * 1000;
  const cadence = observedCadence(lifecycle, range.from, now);
  return {
    nodePools: c.state.nodePools(),
    nodes: c.state.nodes(),
    pods: c.state.pods(),
    history,
    templates: workloadTemplates(c.state).pods(),
    now,
    windowMs,
    current: { spot: spotPolicySet(spotRows.map((r) => r.value)).policies, warmup },
    changes,
    spotInterruptionRate: rate,
    bootDelayMs: bootMs,
    ...(cadence.some((c) => c.stepMs > 1000) ? { cadence } : {}),
    ...(templateChanges.length > 0 ? { templateChanges } : {}),
    recorded,
    ...(body.seed === undefined ? {} : { seed: body.seed }),
  };
}

/** A node's boot when the cluster recorded none: a real EC2 node takes about a minute. */
const DEFAULT_BOOT_MS = 60_000;
/** Lifecycle steps read for the calibration (a day of a busy cluster: ~8,000). */
const LIFECYCLE_LIMIT = 50_000;
/** Drifted disruptions of a pool closer than this are one template change being rolled out (a pool of 20 nodes takes ~20 min at one a minute). */
const DRIFT_BURST_GAP_MS = 30 * 60_000;

/**
 * When each NodePool's template changed, from its recorded drift: Karpenter replaces a drifted
 * pool's nodes one after another (its budgets pace them), so a run of `Drifted` disruptions with
 * gaps under 30 minutes is one change, made just before the run's first replacement.
 */
export function observedTemplateChanges(
  disruptions: readonly { nodePool: string; reason: string; at: number }[],
): { nodePool: string; at: number }[] {
  const last = new Map<string, number>();
  const out: { nodePool: string; at: number }[] = [];
  for (const d of [...disruptions].sort((a, b) => a.at - b.at)) {
    if (d.reason !== "Drifted") continue;
    const prev = last.get(d.nodePool);
    if (prev === undefined || d.at - prev > DRIFT_BURST_GAP_MS)
      out.push({ nodePool: d.nodePool, at: Math.max(0, d.at - 1000) });
    last.set(d.nodePool, d.at);
  }
  return out;
}

/** Spans the control-loop period is estimated over. */
const CADENCE_SPAN_MS = HOUR;
/** Fewer distinct moments than this in a span say nothing about a period: continuous. */
const CADENCE_MIN_GAPS = 8;
/**
 * A period shorter than this is continuous (Karpenter's own batching is ~1–10 s; a grid this fine
 * is only believed with the tight tolerance below). 5 s: the embedded cluster's start-up steps.
 */
const CADENCE_MIN_MS = 5000;

/**
 * How often the cluster's controllers acted, span by span (an hour each from `from`), read from
 * the recorded lifecycle: a cluster whose launches, boots and removals all fall on a grid of P
 * seconds (a simulated cluster fast-forwarded in steps, a controller that polls) acted every P,
 * and a replay that acts every second launches and consolidates sooner than it did — fewer nodes
 * than recorded. Per span: the distinct moments (steps within 1 s are one), the gaps between
 * them; P is the 10th-percentile gap, taken when it is ≥ 5 s and at least 95 % of the gaps are whole
 * multiples (within 1.5 s or 3 %, a tenth of the step at most) of the step there (a neighbouring
 * gap no longer than it: a fast-forward's step changes slowly). Otherwise 1 s: a real cluster's
 * events fall anywhere. A span finer than 10 s is read again in halves (`readSpan`).
 */
export function observedCadence(
  events: readonly { at: number }[],
  from: number,
  to: number,
): { from: number; stepMs: number }[] {
  const times = events
    .map((e) => e.at)
    .filter((t) => t >= from && t < to)
    .sort((a, b) => a - b);
  const spans: { from: number; stepMs: number }[] = [];
  let i = 0;
  for (let start = from; start < to; start += CADENCE_SPAN_MS) {
    const moments: number[] = [];
    for (; i < times.length && (times[i] ?? 0) < start + CADENCE_SPAN_MS; i++) {
      const t = times[i] ?? 0;
      const last = moments.at(-1);
      if (last === undefined || t - last >= 1000) moments.push(t);
    }
    readSpan(spans, moments, start, CADENCE_SPAN_MS);
  }
  return spans;
}

/** The shortest span a period is read over (halving a fine-looking span stops here). */
const CADENCE_MIN_SPAN_MS = 2 * 60_000;
/** A period this long stands for its whole span; a finer one is read again in halves. */
const CADENCE_SETTLED_MS = 10_000;

/**
 * One span's period; a span that reads continuous or finer than 10 s is read again in halves,
 * each half's own reading replacing it (a half with too few moments keeps it): a fast-forward
 * that nears real time steps ever finer (`fastForwardStepMs`: a sixtieth of the lag, 60 s an hour
 * before, 10 s ten minutes before), whose gaps over a whole hour fit no grid or only the finest,
 * though each part of it fits its own; the embedded start-up's two minutes at 5 s then 150 s
 * likewise. A real cluster's halves read as continuous too.
 */
function readSpan(
  out: { from: number; stepMs: number }[],
  moments: readonly number[],
  start: number,
  length: number,
  inherited = 1000,
): void {
  const stepMs = periodOf(moments) ?? inherited;
  if (stepMs >= CADENCE_SETTLED_MS || length < 2 * CADENCE_MIN_SPAN_MS) {
    out.push({ from: start, stepMs });
    return;
  }
  const half = Math.floor(length / 2);
  const cut = moments.findIndex((t) => t >= start + half);
  const k = cut < 0 ? moments.length : cut;
  const parts: { from: number; stepMs: number }[] = [];
  readSpan(parts, moments.slice(0, k), start, half, stepMs);
  readSpan(parts, moments.slice(k), start + half, length - half, stepMs);
  // The same throughout: one span, as read whole.
  if (parts.every((p) => p.stepMs === stepMs)) out.push({ from: start, stepMs });
  else out.push(...parts);
}

/** The period the moments fall on (1 s: off any grid), undefined for too few to tell. */
function periodOf(moments: readonly number[]): number | undefined {
  if (moments.length <= CADENCE_MIN_GAPS) return undefined;
  const gaps = moments.slice(1).map((t, k) => t - (moments[k] ?? t));
  const sorted = [...gaps].sort((a, b) => a - b);
  const p = sorted[Math.floor(sorted.length / 10)] ?? 0;
  if (p < CADENCE_MIN_MS) return 1000;
  // On the grid: a whole multiple of the step there, a neighbour no longer than the gap, else the
  // gap itself (a fast-forward's step changes slowly or jumps, 5 s → 150 s at its start; a real
  // cluster's gaps are anything).
  const fits = (g: number, step: number): boolean => {
    // 1.5 s (the fast-forward's whole-second steps shrink by ~1 s from one to the next, plus ms
    // of jitter) or 3 %, but a tenth of a fine step at most: a 5 s grid with ±1.5 s fits anything.
    const tolerance = Math.min(step / 10, Math.max(1500, 0.03 * step));
    return Math.abs(g - Math.max(1, Math.round(g / step)) * step) <= tolerance;
  };
  const onGrid = gaps.filter((g, k) => {
    const near = [gaps[k - 1], gaps[k + 1]].filter((s): s is number => s !== undefined && s <= g);
    return near.length === 0 || near.some((s) => fits(g, s));
  }).length;
  return onGrid >= 0.95 * gaps.length ? Math.round(p / 1000) * 1000 : 1000;
}

/**
 * The cluster's median NodeClaim boot (Launched → Initialized, else Registered) over the recorded
 * lifecycle, whole seconds, at least 1 s; undefined without a claim that has both steps.
 */
export function observedBootMs(
  events: readonly { nodeClaimUid: string; phase: string; at: number }[],
): number | undefined {
  const steps = new Map<string, { launched?: number; up?: number; registered?: number }>();
  for (const e of events) {
    const s = steps.get(e.nodeClaimUid) ?? {};
    if (e.phase === "Launched") s.launched = e.at;
    else if (e.phase === "Initialized") s.up = e.at;
    else if (e.phase === "Registered") s.registered = e.at;
    steps.set(e.nodeClaimUid, s);
  }
  const boots: number[] = [];
  for (const s of steps.values()) {
    const up = s.up ?? s.registered;
    if (s.launched !== undefined && up !== undefined && up >= s.launched) boots.push(up - s.launched);
  }
  if (boots.length === 0) return undefined;
  boots.sort((a, b) => a - b);
  const median = boots[Math.floor((boots.length - 1) / 2)] ?? 0;
  return Math.min(3_600_000, Math.max(1000, Math.round(median / 1000) * 1000));
}

/** Spot interruptions per spot node-hour over the range, from the store (0 without spot hours). */
async function observedInterruptionRate(
  hub: ClusterHub,
  range: { clusterId: string; from: number; to: number },
  disruptions: readonly { reason: string }[],
): Promise<number> {
  const series = await hub.store.series({ ...range, capacityType: "spot" });
  const interrupted = disruptions.filter((d) => d.reason === "Interrupted").length;
  let spotHours = 0;
  for (const r of series) if (r.kind === "point") spotHours += (r.nodes * r.resolutionMs) / HOUR;
  return spotHours > 0 ? Math.min(60, interrupted / spotHours) : 0;
}
