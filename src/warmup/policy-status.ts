// The status Wave writes on each WarmupPolicy (issue 31): the pool's warmup state, what blocks
// it, its warm nodes, and hits and misses. `warmupPolicyStatus` is pure; `WarmupStatusWriter`
// patches the status subresource (field manager wave-status) only when it changed, from the
// warmup controller's last pass per pool and the events it reports.
import type { KubeClient } from "../kube/port.ts";
import { isNotFound } from "../kube/port.ts";
import {
  STATUS_FIELD_MANAGER,
  type WarmupPolicyResource,
  type WarmupPolicyStatus,
} from "../objects/policy-crds.ts";
import { type Clock, repeatUntilAborted } from "../shared/clock.ts";
import { silentLogger, type Logger } from "../shared/log.ts";
import type { PoolOutcome } from "./controller.ts";
import { stampedConditions, statusChanged, statusPatch, type WantedCondition } from "../policy/status.ts";
import { warmupPolicyFromResource } from "../policy/warmup-resource.ts";
import { warmupPoliciesInForce, type PolicyConflict } from "../policy/in-force.ts";
import type { WarmupEvent } from "./stats.ts";

/** The CR's NodePool ("" if it names none: a CRD applied without its schema). */
const poolOf = (cr: WarmupPolicyResource): string =>
  (cr.spec as Partial<WarmupPolicyResource["spec"]> | undefined)?.nodePool ?? "";

export interface WarmupStatusInput {
  /** The controller's last pass over the CR's pool (undefined: none yet). */
  outcome: PoolOutcome | undefined;
  /** The NodePool exists in the cluster. */
  poolExists: boolean;
  /** Hits and misses since the CR's status was last written. */
  newHits: number;
  newMisses: number;
  /** Counts already written, if above the CR's (the state may lag the writer's last patch). */
  writtenHits?: number;
  writtenMisses?: number;
  /** Another WarmupPolicy of the pool decides (src/policy/in-force.ts): this one is not in force. */
  conflict?: PolicyConflict;
}

export function warmupPolicyStatus(
  cr: WarmupPolicyResource,
  input: WarmupStatusInput,
  now: number,
): WarmupPolicyStatus {
  const generation = cr.metadata.generation;
  const before = cr.status;
  const valid = warmupPolicyFromResource(cr);
  const pool = poolOf(cr);
  let state: string;
  let blocker: string | undefined;
  let ready: WantedCondition;
  const conflicts: WantedCondition[] = [];
  if (input.conflict) {
    state = "blocked";
    blocker = `${input.conflict.message} (the oldest WarmupPolicy of a pool decides: delete this one or ${input.conflict.winner})`;
    ready = { type: "Ready", status: "False", reason: "Conflict", message: blocker };
    conflicts.push({ type: "Conflict", status: "True", reason: "OlderPolicyDecides", message: blocker });
  } else if (!valid.ok) {
    state = "blocked";
    blocker = valid.errors.join("; ");
    ready = { type: "Ready", status: "False", reason: "InvalidSpec", message: blocker };
  } else if (!input.poolExists) {
    state = "blocked";
    blocker = `NodePool ${pool} not found`;
    ready = { type: "Ready", status: "False", reason: "NodePoolNotFound", message: blocker };
  } else if (input.outcome === undefined) {
    state = valid.policy.enabled ? "idle" : "disabled";
    ready = {
      type: "Ready",
      status: "Unknown",
      reason: "Pending",
      message: "the warmup controller has not run for the pool yet",
    };
  } else {
    state = input.outcome.state;
    blocker = input.outcome.blocker;
    ready =
      state === "blocked"
        ? { type: "Ready", status: "False", reason: "Blocked", message: blocker ?? "blocked" }
        : {
            type: "Ready",
            status: "True",
            reason: state === "disabled" ? "Disabled" : "Active",
            message: `warmup ${state}`,
          };
  }
  const out: WarmupPolicyStatus = {
    state,
    warmNodes: input.conflict ? 0 : (input.outcome?.warmNodes ?? 0),
    hits: Math.max(before?.hits ?? 0, input.writtenHits ?? 0) + input.newHits,
    misses: Math.max(before?.misses ?? 0, input.writtenMisses ?? 0) + input.newMisses,
    conditions: stampedConditions([ready, ...conflicts], before?.conditions, now, generation),
  };
  if (generation !== undefined) out.observedGeneration = generation;
  if (blocker !== undefined) out.blocker = blocker;
  return out;
}

export interface WarmupStatusWriterOptions {
  kube: KubeClient;
  /** The WarmupPolicies as the agent's state holds them. */
  resources: () => readonly WarmupPolicyResource[];
  outcome: (pool: string) => PoolOutcome | undefined;
  poolExists: (pool: string) => boolean;
  clock: Clock;
  log?: Logger;
}

/** Folds the controller's events into per-pool counts and writes each WarmupPolicy's status. */
export class WarmupStatusWriter {
  readonly #o: WarmupStatusWriterOptions;
  readonly #log: Logger;
  /** Hits and misses per pool not yet in a written status. */
  readonly #pending = new Map<string, { hits: number; misses: number }>();
  /** Counts last written per CR name (counts only grow: the larger of this and the CR's wins). */
  readonly #written = new Map<string, { hits: number; misses: number }>();
  writes = 0;

  constructor(o: WarmupStatusWriterOptions) {
    this.#o = o;
    this.#log = (o.log ?? silentLogger).child({ component: "warmup-policy-status" });
  }

  /** Every event the controller reports (beside the agent's outbox). */
  record(e: WarmupEvent): void {
    if (e.type !== "hit" && e.type !== "miss") return;
    const c = this.#pending.get(e.pool) ?? { hits: 0, misses: 0 };
    if (e.type === "hit") c.hits++;
    else c.misses++;
    this.#pending.set(e.pool, c);
  }

  async sync(): Promise<void> {
    const now = this.#o.clock.now();
    const resources = this.#o.resources();
    const conflicts = new Map(warmupPoliciesInForce(resources).conflicts.map((c) => [c.key, c]));
    for (const cr of resources) {
      const pool = poolOf(cr);
      const name = cr.metadata.name ?? "";
      const conflict = conflicts.get(name);
      // The pool's hits and misses are the deciding policy's.
      const pending = (!conflict && this.#pending.get(pool)) || { hits: 0, misses: 0 };
      const written = this.#written.get(name);
      const status = warmupPolicyStatus(
        cr,
        {
          outcome: this.#o.outcome(pool),
          poolExists: this.#o.poolExists(pool),
          newHits: pending.hits,
          newMisses: pending.misses,
          ...(written ? { writtenHits: written.hits, writtenMisses: written.misses } : {}),
          ...(conflict ? { conflict } : {}),
        },
        now,
      );
      if (!statusChanged(cr.status, status)) continue;
      try {
        await this.#o.kube.patch(
          "WarmupPolicy",
          name,
          { status: statusPatch(cr.status, status) },
          { type: "merge", subresource: "status", fieldManager: STATUS_FIELD_MANAGER },
        );
        this.writes++;
        if (!conflict) this.#pending.delete(pool);
        this.#written.set(name, { hits: status.hits ?? 0, misses: status.misses ?? 0 });
      } catch (err) {
        if (!isNotFound(err))
          this.#log.warn("could not write a WarmupPolicy's status", { policy: cr.metadata.name, err });
      }
    }
  }

  async run(signal: AbortSignal, intervalMs = 5_000): Promise<void> {
    await repeatUntilAborted(this.#o.clock, signal, intervalMs, () => this.sync());
  }
}
