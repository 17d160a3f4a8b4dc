// What-if on a connected cluster: POST a candidate spot/warmup policy; core gathers what it
// knows of the cluster — NodePools, each workload's pods (its template), its current policies,
// the last 24 h of pods per workload and its spot interruption rate — and the simulator replays
// that window under the current and the candidate policy (src/sim/cluster-whatif.ts, injected
// by the composition root as `run`). Viewers may ask: nothing is changed in the cluster.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { ClusterHub } from "../../core/hub/hub.ts";
import {
  WhatifReportSchema,
  WhatifRequestSchema,
  type WhatifProgressDto,
  type WhatifReportDto,
  type WhatifRequestDto,
} from "../../dashboard/dto.ts";
import { sseFrame } from "../sse.ts";
import { workloadTemplates } from "../../dashboard/figures/workload-pods.ts";
import { parsePolicy } from "../../policy/validate-warmup.ts";
import type { WarmupPolicy } from "../../policy/warmup.ts";
import type { SpotPolicy } from "../../policy/spot.ts";
import { parseSpotPolicies, PolicyValidationError } from "../../policy/validate-spot.ts";
import type { ApiPlugin } from "../app.ts";
import { spotPolicySet } from "./policies.ts";
import { policiesInForce } from "./clusters/console-context.ts";
import { clusterIdParam, errorSchema } from "./schemas.ts";
import {
  observedBootMs,
  observedCadence,
  observedInterruptionRate,
  observedPoolBootMs,
  observedPoolPullMs,
  observedTemplateChanges,
} from "./whatif-observed.ts";
import { podStarts, type PodStartSample } from "../../dashboard/figures/pod-starts.ts";

export {
  observedBootMs,
  observedCadence,
  observedPoolBootMs,
  observedPoolPullMs,
  observedTemplateChanges,
} from "./whatif-observed.ts";

const HOUR = 3_600_000;

type State = NonNullable<ReturnType<ClusterHub["get"]>>["state"];

/** What the route hands the simulator (src/sim/cluster-whatif.ts ClusterWhatifInput). */
export interface WhatifInput {
  nodePools: ReturnType<State["nodePools"]>;
  nodes: ReturnType<State["nodes"]>;
  pods: ReturnType<State["pods"]>;
  /** The last pod core saw of each workload (src/dashboard/figures/workload-pods.ts). */
  templates?: ReturnType<State["pods"]>;
  /** Pods per workload per bucket, with its newest revision and that revision's pods (rollouts). */
  history: readonly {
    workload: string;
    ts: number;
    pods: number;
    revision?: string;
    revisionPods?: number;
  }[];
  now: number;
  windowMs: number;
  current: { spot: SpotPolicy[]; warmup: Record<string, WarmupPolicy> };
  changes: { spot: SpotPolicy[]; warmup: Record<string, WarmupPolicy> };
  spotInterruptionRate: number;
  bootDelayMs: number;
  /** Per NodePool: its recorded boot (observedPoolBootMs) and image pull (observedPoolPullMs). */
  poolBootMs?: Record<string, number>;
  poolPullMs?: Record<string, number>;
  /** The pod starts core saw over the window (src/dashboard/figures/pod-starts.ts). */
  podStarts?: PodStartSample[];
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
  /** Where the cluster's current policies are read (as the console's pages: its resources, or the store). */
  policySource?: "store" | "crs";
  /**
   * Seconds to wait when no replay can be queued now (429 before any work); undefined: go ahead.
   * `pending`: what-ifs admitted whose input is still being gathered (they will queue too).
   */
  busy?: (pending: number) => number | undefined;
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

/**
 * Each cluster's last pod per workload (a workload between runs when a what-if is asked still has
 * a template) and the pod starts it saw (the model check's), remembered from its first batch on.
 */
function remember(hub: ClusterHub, id: string): void {
  const c = hub.get(id);
  if (!c) return;
  workloadTemplates(c.state);
  podStarts(c.state);
}

export function whatifRoutes(deps: WhatifDeps): ApiPlugin {
  deps.hub.onChange((id) => remember(deps.hub, id));
  const pending = { gathering: 0 };
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
          body: WhatifRequestSchema,
          response: {
            200: WhatifReportSchema,
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
        const admission = await admit(deps, pending, c, req.body, changes);
        if (typeof admission === "number")
          return reply
            .code(429)
            .header("retry-after", String(admission))
            .send({
              error: "too_many_requests",
              message: `what-if replays are all busy and the queue is full; try again in ${admission} s`,
            });
        const { input, run } = admission;
        reply.raw.once("close", admission.release); // never handed over: the count ends anyway
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
            const report = await run(input, job);
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
          run: (onProgress) => run(input, { ...job, onProgress }),
          clusterId: c.id,
          started,
          gone,
        });
        return reply;
      },
    );
  };
}

/**
 * Admission before any work (issue 42): the queue check counts the what-ifs still gathering
 * their input (`pending.gathering`), and check and admission are one synchronous step, so a burst
 * cannot all pass it and then gather a day of pods each on core's main thread. Seconds to wait,
 * or the input with the runner that hands it over (and ends its count as gathering).
 */
async function admit(
  deps: WhatifDeps,
  pending: { gathering: number },
  c: NonNullable<ReturnType<ClusterHub["get"]>>,
  body: WhatifRequestDto,
  changes: WhatifInput["changes"],
): Promise<number | { input: WhatifInput; run: WhatifRunner; release: () => void }> {
  const retry = deps.busy?.(pending.gathering);
  if (retry !== undefined) return retry;
  pending.gathering++;
  let counted = true;
  const handed = (): void => {
    if (counted) pending.gathering--;
    counted = false;
  };
  try {
    const input = await whatifInput(deps, c, body, changes);
    const run: WhatifRunner = (i, job) => {
      try {
        return deps.run(i, job);
      } finally {
        handed(); // queued (or refused) by the runner now
      }
    };
    return { input, run, release: handed };
  } catch (err) {
    handed();
    throw err;
  }
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
  const [inForce, history, series] = await Promise.all([
    policiesInForce(deps.policySource, deps.hub, c.id),
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
  const starts = podStarts(c.state).between(range.from, now);
  // Per pool, unless the body sets one boot for all.
  const poolBootMs = body.bootDelaySeconds === undefined ? observedPoolBootMs(lifecycle, cadence) : {};
  const poolPullMs = observedPoolPullMs(starts, poolBootMs, bootMs);
  const nodeOverlays = c.state.nodeOverlays();
  return {
    nodePools: c.state.nodePools(),
    ...(nodeOverlays.length > 0 ? { nodeOverlays } : {}),
    nodes: c.state.nodes(),
    pods: c.state.pods(),
    history,
    templates: workloadTemplates(c.state).pods(),
    now,
    windowMs,
    current: {
      spot: spotPolicySet(inForce.spot.map((r) => r.value)).policies,
      warmup: Object.fromEntries(inForce.warmup),
    },
    changes,
    spotInterruptionRate: rate,
    bootDelayMs: bootMs,
    poolBootMs,
    poolPullMs,
    podStarts: starts,
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
