// The status Wave writes on each SpotPolicy (issue 31): target vs actual on-demand/spot and the
// conditions Ready / WorkloadFound / PinnedByWorkload / Adopting, from what the spot repair
// computes anyway (repair.ts `status()`, adopt-plan.ts `plannedMoves`). `spotPolicyStatus` is
// pure; `SpotStatusWriter` patches the status subresource, only when it changed, as the
// repair's leader (one writer per cluster).
import type { KubeClient } from "../kube/port.ts";
import { isNotFound } from "../kube/port.ts";
import {
  STATUS_FIELD_MANAGER,
  type SpotPolicyResource,
  type SpotPolicyStatus,
} from "../objects/policy-crds.ts";
import { type Clock, repeatUntilAborted } from "../shared/clock.ts";
import { silentLogger, type Logger } from "../shared/log.ts";
import type { PolicyProblem, SpotPolicyIndex } from "./crd-policy-source.ts";
import type { PolicyConflict } from "../policy/in-force.ts";
import { resourceKey, spotPolicyFromResource } from "../policy/spot-resource.ts";
import { workloadKey } from "../policy/spot.ts";
import {
  rfc3339,
  stampedConditions,
  statusChanged,
  statusPatch,
  type WantedCondition,
} from "../policy/status.ts";
import type { AdoptionStatus } from "./repair.ts";

const kindName = (cr: SpotPolicyResource): string => `${cr.spec.targetRef.kind} ${cr.spec.targetRef.name}`;

/**
 * The status of one SpotPolicy: from the repair's view of its workload (`seen`; undefined when
 * the repair has not looked at it yet) and the index's verdict on the CR (`problem`: it does not
 * validate; `conflict`: another SpotPolicy on its workload decides, src/policy/in-force.ts).
 */
export function spotPolicyStatus(
  cr: SpotPolicyResource,
  seen: AdoptionStatus | undefined,
  problem: PolicyProblem | undefined,
  now: number,
  conflict?: PolicyConflict,
): SpotPolicyStatus {
  const generation = cr.metadata.generation;
  const previous = cr.status?.conditions;
  const out: SpotPolicyStatus = {};
  if (generation !== undefined) out.observedGeneration = generation;
  if (conflict) {
    const message = `${conflict.message} (the oldest SpotPolicy of a workload decides: delete this one or ${conflict.winner})`;
    out.conditions = stampedConditions(
      [
        { type: "Ready", status: "False", reason: "Conflict", message },
        { type: "Conflict", status: "True", reason: "OlderPolicyDecides", message },
      ],
      previous,
      now,
      generation,
    );
    return out;
  }
  if (problem && !problem.keptPrevious) {
    out.conditions = stampedConditions(
      [{ type: "Ready", status: "False", reason: "InvalidSpec", message: problem.errors.join("; ") }],
      previous,
      now,
      generation,
    );
    return out;
  }
  if (seen === undefined) {
    out.conditions = stampedConditions(
      [
        {
          type: "Ready",
          status: "Unknown",
          reason: "Pending",
          message: "the spot repair has not looked at it yet",
        },
      ],
      previous,
      now,
      generation,
    );
    return out;
  }
  out.targetOnDemand = seen.target;
  out.targetSpot = seen.live - seen.target;
  out.onDemand = seen.onDemand;
  out.spot = seen.live - seen.onDemand;
  const found = seen.live + seen.pinned + seen.outside + seen.waiting > 0;
  const atTarget = seen.direction === "none" && seen.onDemand === seen.target;
  const moving = seen.mode === "on" && seen.toMove > seen.moved;
  const conds: WantedCondition[] = [
    problem
      ? {
          type: "Ready",
          status: "False",
          reason: "InvalidSpec",
          message: `the last valid version stays in force: ${problem.errors.join("; ")}`,
        }
      : atTarget
        ? {
            type: "Ready",
            status: "True",
            reason: "AtTarget",
            message: `${seen.onDemand} of ${seen.live} pods on-demand, as the policy wants`,
          }
        : {
            type: "Ready",
            status: "False",
            reason: seen.mode === "on" ? "Converging" : seen.mode === "dry-run" ? "DryRun" : "RepairOff",
            message: `${seen.onDemand} of ${seen.live} pods on-demand, target ${seen.target}`,
          },
    found
      ? { type: "WorkloadFound", status: "True", reason: "PodsFound", message: `${kindName(cr)} has pods` }
      : {
          type: "WorkloadFound",
          status: "False",
          reason: "NoPods",
          message: `no pod of ${kindName(cr)} in namespace ${cr.metadata.namespace ?? ""}`,
        },
    seen.pinned > 0
      ? {
          type: "PinnedByWorkload",
          status: "True",
          reason: "CapacityTypeInPodSpec",
          message: `${seen.pinned} pod(s) pin karpenter.sh/capacity-type in their own spec: left alone`,
        }
      : {
          type: "PinnedByWorkload",
          status: "False",
          reason: "NotPinned",
          message: "no pod pins a capacity type",
        },
    moving || seen.waiting > 0
      ? {
          type: "Adopting",
          status: "True",
          reason: seen.waiting > 0 ? "WaitingForNodes" : seen.heldBy !== undefined ? "Held" : "Moving",
          message:
            `${seen.moved} of ${Math.max(seen.toMove, seen.moved)} moved` +
            (seen.waiting > 0 ? `, ${seen.waiting} pod(s) wait for a node` : "") +
            (seen.heldBy !== undefined ? `; held: ${seen.heldBy}` : ""),
        }
      : { type: "Adopting", status: "False", reason: "Done", message: `${seen.adopted} pod(s) adopted` },
  ];
  out.conditions = stampedConditions(conds, previous, now, generation);
  if (seen.lastRepair)
    out.lastRepair = {
      time: rfc3339(seen.lastRepair.at),
      pod: seen.lastRepair.pod,
      action: seen.lastRepair.action,
    };
  else if (cr.status?.lastRepair) out.lastRepair = cr.status.lastRepair;
  return out;
}

export interface SpotStatusWriterOptions {
  kube: KubeClient;
  index: SpotPolicyIndex;
  /** The repair's view per workload key (SpotRepair.status()). */
  seen: () => ReadonlyMap<string, AdoptionStatus>;
  clock: Clock;
  logger?: Logger;
}

export class SpotStatusWriter {
  readonly #o: SpotStatusWriterOptions;
  readonly #log: Logger;
  /** Status writes made (tests, debugging). */
  writes = 0;

  constructor(o: SpotStatusWriterOptions) {
    this.#o = o;
    this.#log = (o.logger ?? silentLogger).child({ component: "spot-policy-status" });
  }

  /** One pass: each SpotPolicy whose status would change gets one merge patch of it. */
  async sync(): Promise<void> {
    const { index, kube, clock } = this.#o;
    const seen = this.#o.seen();
    const now = clock.now();
    for (const cr of index.resources()) {
      const key = resourceKey(cr);
      const converted = spotPolicyFromResource(cr);
      const problem = index.problem(key);
      // The workload this CR decides for (its own spec, or the last valid one in force).
      const workload = converted.ok ? converted.policy.workload : undefined;
      const decides = workload !== undefined && index.resourceFor(workload) === key;
      const status = spotPolicyStatus(
        cr,
        decides ? seen.get(workloadKey(workload)) : undefined,
        problem,
        now,
        index.conflict(key),
      );
      if (!statusChanged(cr.status, status)) continue;
      try {
        await kube.patch(
          "SpotPolicy",
          cr.metadata.name ?? "",
          { status: statusPatch(cr.status, status) },
          {
            namespace: cr.metadata.namespace ?? "",
            type: "merge",
            subresource: "status",
            fieldManager: STATUS_FIELD_MANAGER,
          },
        );
        this.writes++;
      } catch (err) {
        if (!isNotFound(err)) this.#log.warn("could not write a SpotPolicy's status", { policy: key, err });
      }
    }
  }

  /** Syncs every `intervalMs` until `signal` aborts (the repair's leader only). */
  async run(signal: AbortSignal, intervalMs = 5_000): Promise<void> {
    await repeatUntilAborted(this.#o.clock, signal, intervalMs, () => this.sync());
  }
}
