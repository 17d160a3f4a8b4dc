// Admission: decide() (pure) says what to do with a request, review() carries it out — asking the
// allocator for a slot within an internal deadline — and always answers "allowed": the webhook
// changes where a pod runs, never whether it is created.
import type { OwnerReference, Pod } from "../objects/kube.ts";
import type { Clock } from "../shared/clock.ts";
import { silentLogger, type Logger } from "../shared/log.ts";
import {
  admissionResponse,
  isPatchablePod,
  isPodCreate,
  type AdmissionRequest,
  type AdmissionReviewResponse,
} from "./admission.ts";
import type { Allocator } from "./allocator.ts";
import type { OwnerRef } from "./backing.ts";
import { ON_DEMAND, POD_TEMPLATE_HASH_LABEL, SPOT, revisionOf, type Capacity } from "./constants.ts";
import { ledgerId } from "./ledger.ts";
import { FALLBACK_REASONS, type SpotMetrics } from "./metrics.ts";
import { buildNotePatch, buildPatch, capacityConstraintOf } from "./patch.ts";
import { workloadKey, type SpotPolicy, type WorkloadRef } from "../policy/spot.ts";
import { resolveWorkload } from "./workload.ts";
import { ASSIGNMENT_LABEL, LEDGER_LABEL, SLOT_LABEL } from "../objects/wave.ts";
import { CAPACITY_TYPE_LABEL } from "../objects/karpenter.ts";

export type Decision =
  /** Not ours to touch: admitted unchanged. */
  | { action: "allow"; reason: string }
  /** A managed workload's pod that already constrains capacity type: annotated, warned, not counted. */
  | { action: "leave"; pod: Pod; reason: string }
  /** The pod already holds a slot (the apiserver re-invoked the webhook): re-assert it, no new slot. */
  | { action: "reassert"; pod: Pod; policy: SpotPolicy; capacity: Capacity; slot: string; ledger: string }
  /** Needs a slot from the ledger. */
  | { action: "assign"; pod: Pod; policy: SpotPolicy; workload: WorkloadRef };

export type PolicyLookup = (ref: WorkloadRef) => SpotPolicy | undefined;

export function decide(req: AdmissionRequest, lookup: PolicyLookup): Decision {
  if (!isPodCreate(req)) return { action: "allow", reason: "not a pod CREATE" };
  if (!isPatchablePod(req.object)) return { action: "allow", reason: "object is not a well-formed pod" };
  const pod = req.object;
  const namespace =
    typeof req.namespace === "string" && req.namespace !== "" ? req.namespace : pod.metadata.namespace;
  if (typeof namespace !== "string" || namespace === "") return { action: "allow", reason: "no namespace" };
  const resolved = resolveWorkload(pod, namespace);
  if (!resolved.managed) return { action: "allow", reason: resolved.reason };
  let found: { policy: SpotPolicy; workload: WorkloadRef } | undefined;
  for (const w of resolved.candidates) {
    const policy = lookup(w);
    if (policy) {
      found = { policy, workload: w };
      break;
    }
  }
  if (!found) return { action: "allow", reason: "no spot policy for the workload" };
  if (typeof pod.spec.nodeName === "string" && pod.spec.nodeName !== "")
    return { action: "allow", reason: "pod is already bound to a node" };

  const labels = pod.metadata.labels ?? {};
  const id = ledgerId(found.workload);
  const held = labels[ASSIGNMENT_LABEL];
  const slot = labels[SLOT_LABEL];
  if ((held === ON_DEMAND || held === SPOT) && slot && labels[LEDGER_LABEL] === id)
    return { action: "reassert", pod, policy: found.policy, capacity: held, slot, ledger: id };
  const where = capacityConstraintOf(pod);
  if (where !== undefined)
    return {
      action: "leave",
      pod,
      reason: `pod already constrains ${CAPACITY_TYPE_LABEL} (${where}); Wave left its placement unchanged and does not count it`,
    };
  return { action: "assign", pod, policy: found.policy, workload: found.workload };
}

/** What a pod gets when no slot can be had in time. */
export type Fallback = "unchanged" | "spot-preferred";

export interface ReviewDeps {
  policies: { lookup: PolicyLookup };
  allocator: Allocator;
  clock: Clock;
  /** Internal deadline for the ledger, well below the webhook's timeoutSeconds. Default 1000 ms. */
  deadlineMs?: number;
  fallback?: Fallback;
  onDemandDeletionCost?: number;
  logger?: Logger;
  metrics?: SpotMetrics;
  /** Records late answers as aggregated Events on the workload (late-events.ts); never blocks. */
  lateAnswers?: { record(workload: string): void };
  /** Remote address of the caller (per-source limits). */
  source?: string;
}

export const DEFAULT_DEADLINE_MS = 1000;

/** Abort reason for the deadline timer once the answer is in (a shared value: no stack capture). */
const SETTLED = new Error("settled");

class DeadlineError extends Error {
  constructor(ms: number) {
    super(`spot ledger not reached within ${ms} ms`);
    this.name = "DeadlineError";
  }
}

/** Answers one AdmissionRequest. Never throws and never denies. */
export async function review(req: AdmissionRequest, deps: ReviewDeps): Promise<AdmissionReviewResponse> {
  const log = deps.logger ?? silentLogger;
  let decision: Decision;
  try {
    decision = decide(req, (ref) => deps.policies.lookup(ref));
  } catch (err) {
    log.error("spot placement decision failed; admitting unchanged", { uid: req.uid, err });
    return admissionResponse(req.uid);
  }
  switch (decision.action) {
    case "allow":
      return admissionResponse(req.uid);
    case "leave":
      return admissionResponse(req.uid, buildNotePatch(decision.pod, decision.reason), [
        `wave spot placement: ${decision.reason}`,
      ]);
    case "reassert":
      return admissionResponse(
        req.uid,
        buildPatch(
          decision.pod,
          { capacity: decision.capacity, slot: decision.slot, ledger: decision.ledger },
          decision.policy.strategy,
          {
            onDemandDeletionCost: deps.onDemandDeletionCost,
            // A pod first placed in Prefer's fallback window keeps its preference.
            softSpot: capacityConstraintOf(decision.pod) === "preferred node affinity",
          },
        ),
      );
    case "assign":
      return assign(req, decision, deps, log);
  }
}

async function assign(
  req: AdmissionRequest,
  d: Extract<Decision, { action: "assign" }>,
  deps: ReviewDeps,
  log: Logger,
): Promise<AdmissionReviewResponse> {
  const deadlineMs = deps.deadlineMs ?? DEFAULT_DEADLINE_MS;
  const cancel = new AbortController();
  const timer = new AbortController();
  const workload = workloadKey(d.workload);
  if (req.dryRun !== true) deps.metrics?.seen(workload);
  let answered = false;
  try {
    const deadline = deps.clock.sleep(deadlineMs, timer.signal).then(
      () => {
        throw new DeadlineError(deadlineMs);
      },
      () => undefined as never,
    );
    const allocation = deps.allocator.allocate({
      workload: d.workload,
      policy: d.policy,
      dryRun: req.dryRun === true,
      signal: cancel.signal,
      revision: revisionOf(d.pod),
      owner: ownerOf(d.pod, d.workload.namespace),
      source: deps.source,
    });
    // A slot granted after the fallback went out is a late answer (its reservation expires unused).
    allocation.then(
      () => {
        if (!answered) return;
        deps.metrics?.lateAnswers.inc({ workload });
        deps.lateAnswers?.record(workload);
      },
      () => undefined,
    );
    const result = await Promise.race([allocation, deadline]);
    answered = true;
    if (req.dryRun !== true) {
      deps.metrics?.admissions.inc({ workload, assignment: result.capacity });
      if (result.backed === false) deps.metrics?.unbacked.inc({ workload });
    }
    return admissionResponse(
      req.uid,
      buildPatch(d.pod, result, d.policy.strategy, {
        onDemandDeletionCost: deps.onDemandDeletionCost,
        softSpot: result.softSpot === true,
      }),
    );
  } catch (err) {
    answered = true;
    if (req.dryRun !== true)
      deps.metrics?.fallbacks.inc({
        workload,
        reason: err instanceof DeadlineError ? FALLBACK_REASONS[0] : FALLBACK_REASONS[1],
      });
    cancel.abort(err);
    const why = err instanceof Error ? err.message : String(err);
    log.warn("spot slot unavailable; admitting with the fallback", {
      uid: req.uid,
      err: why,
      fallback: deps.fallback ?? "unchanged",
    });
    const note = `not placed by Wave: ${why}`;
    const ops =
      deps.fallback === "spot-preferred"
        ? buildPatch(d.pod, { capacity: SPOT }, "Prefer", { note })
        : buildNotePatch(d.pod, note);
    return admissionResponse(req.uid, ops, [`wave spot placement: ${note}`]);
  } finally {
    timer.abort(SETTLED);
  }
}

/**
 * The pod's controller with its uid (what the backing check reads), if the pod names one. A
 * controller reference without a uid is returned as nothing: such a review is unbacked (the
 * ReplicaSet and StatefulSet controllers always set the uid; issue 32).
 */
function ownerOf(pod: Pod, namespace: string): OwnerRef | undefined {
  const refs: unknown = pod.metadata.ownerReferences;
  const o = Array.isArray(refs)
    ? (refs as unknown[]).find(
        (r): r is OwnerReference =>
          typeof r === "object" && r !== null && (r as OwnerReference).controller === true,
      )
    : undefined;
  if (
    !o ||
    (o.kind !== "ReplicaSet" && o.kind !== "StatefulSet") ||
    typeof o.name !== "string" ||
    typeof o.uid !== "string" ||
    o.uid === ""
  )
    return undefined;
  const hash = pod.metadata.labels?.[POD_TEMPLATE_HASH_LABEL];
  return {
    kind: o.kind,
    namespace,
    name: o.name,
    uid: o.uid,
    ...(o.kind === "ReplicaSet" && typeof hash === "string" ? { revision: hash } : {}),
  };
}
