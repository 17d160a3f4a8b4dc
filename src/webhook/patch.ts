// The pure patch builder: the JSON Patch that pins a pod to a capacity type without clobbering the
// user's own scheduling constraints. Idempotent: applying it to an already-patched pod adds nothing
// (the apiserver may reinvoke the webhook — reinvocationPolicy IfNeeded).
import type { NodeSelectorRequirement, Pod } from "../objects/kube.ts";
import type { JsonPatchOp } from "./admission.ts";
import { DELETION_COST_ANNOTATION, ON_DEMAND, type Capacity } from "./constants.ts";
import type { Strategy } from "../policy/spot.ts";
import { ASSIGNMENT_LABEL, LEDGER_LABEL, NOTE_ANNOTATION, SLOT_LABEL } from "../objects/wave.ts";
import { CAPACITY_TYPE_LABEL } from "../objects/karpenter.ts";

export interface Assignment {
  capacity: Capacity;
  /** Slot token and ledger id; absent for an uncounted fallback placement. */
  slot?: string;
  ledger?: string;
}

export interface PatchOptions {
  /** pod-deletion-cost for on-demand pods, so scale-down removes spot pods first. */
  onDemandDeletionCost?: number;
  /** Adds a `wave.sh/spot-placement-note` annotation. */
  note?: string;
  /**
   * Prefer's fallback window (ADR 0007): a spot pod gets a spot *preference* instead of the
   * required spot term.
   */
  softSpot?: boolean;
}

export const DEFAULT_ON_DEMAND_DELETION_COST = 10000;
export const PREFERRED_WEIGHT = 100;

/** RFC 6901 escaping of one path segment. */
export const pointerSegment = (s: string): string => s.replaceAll("~", "~0").replaceAll("/", "~1");

const AFFINITY = "/spec/affinity";
const NODE_AFFINITY = `${AFFINITY}/nodeAffinity`;
const REQUIRED = `${NODE_AFFINITY}/requiredDuringSchedulingIgnoredDuringExecution`;
const PREFERRED = `${NODE_AFFINITY}/preferredDuringSchedulingIgnoredDuringExecution`;

function sameRequirement(a: NodeSelectorRequirement, b: NodeSelectorRequirement): boolean {
  return (
    a.key === b.key &&
    a.operator === b.operator &&
    (a.values ?? []).length === (b.values ?? []).length &&
    (a.values ?? []).every((v, i) => v === b.values?.[i])
  );
}

/** Where the pod already constrains karpenter.sh/capacity-type, if it does. */
export function capacityConstraintOf(pod: Pod): string | undefined {
  if (pod.spec.nodeSelector?.[CAPACITY_TYPE_LABEL] !== undefined) return "nodeSelector";
  const na = pod.spec.affinity?.nodeAffinity;
  const terms = na?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
  if (terms.some((t) => (t.matchExpressions ?? []).some((e) => e.key === CAPACITY_TYPE_LABEL)))
    return "required node affinity";
  const prefs = na?.preferredDuringSchedulingIgnoredDuringExecution ?? [];
  if (prefs.some((p) => (p.preference.matchExpressions ?? []).some((e) => e.key === CAPACITY_TYPE_LABEL)))
    return "preferred node affinity";
  return undefined;
}

/**
 * JSON Patch ops that add the capacity-type constraint, Wave's labels and the deletion cost.
 * On-demand pods and spot pods get a required term ANDed into every nodeSelectorTerm (one is
 * created if there are none). Under Prefer a spot pod gets a preferred term (weight 100) instead
 * only while the workload is in its fallback window (spot seen unavailable, ADR 0007), and an
 * uncounted fallback placement (no slot) always gets the preference.
 */
export function buildPatch(
  pod: Pod,
  assignment: Assignment,
  strategy: Strategy,
  opts: PatchOptions = {},
): JsonPatchOp[] {
  const ops: JsonPatchOp[] = [];
  // An uncounted (fallback) placement gets no labels: it holds no slot.
  const labels: Record<string, string> =
    assignment.slot === undefined
      ? {}
      : { [ASSIGNMENT_LABEL]: assignment.capacity, [SLOT_LABEL]: assignment.slot };
  if (assignment.slot !== undefined && assignment.ledger !== undefined)
    labels[LEDGER_LABEL] = assignment.ledger;
  addMapEntries(ops, "/metadata/labels", pod.metadata.labels, labels);

  const annotations: Record<string, string> = {};
  if (assignment.capacity === ON_DEMAND && assignment.slot !== undefined) {
    if (pod.metadata.annotations?.[DELETION_COST_ANNOTATION] === undefined)
      annotations[DELETION_COST_ANNOTATION] = String(
        opts.onDemandDeletionCost ?? DEFAULT_ON_DEMAND_DELETION_COST,
      );
  }
  if (opts.note !== undefined) annotations[NOTE_ANNOTATION] = opts.note;
  addMapEntries(ops, "/metadata/annotations", pod.metadata.annotations, annotations);

  const requirement: NodeSelectorRequirement = {
    key: CAPACITY_TYPE_LABEL,
    operator: "In",
    values: [assignment.capacity],
  };
  const required =
    assignment.capacity === ON_DEMAND ||
    strategy === "Require" ||
    (assignment.slot !== undefined && opts.softSpot !== true);
  if (required) addRequired(ops, pod, requirement);
  else addPreferred(ops, pod, requirement);
  return ops;
}

/** Ops that only annotate the pod (a managed workload's pod Wave leaves unchanged). */
export function buildNotePatch(pod: Pod, note: string): JsonPatchOp[] {
  const ops: JsonPatchOp[] = [];
  addMapEntries(ops, "/metadata/annotations", pod.metadata.annotations, { [NOTE_ANNOTATION]: note });
  return ops;
}

function addMapEntries(
  ops: JsonPatchOp[],
  path: string,
  existing: Record<string, string> | undefined,
  entries: Record<string, string>,
): void {
  const wanted = Object.entries(entries).filter(([k, v]) => existing?.[k] !== v);
  if (wanted.length === 0) return;
  if (existing === undefined) {
    ops.push({ op: "add", path, value: Object.fromEntries(wanted) });
    return;
  }
  // "add" on an existing member replaces its value (RFC 6902 §4.1).
  for (const [k, v] of wanted) ops.push({ op: "add", path: `${path}/${pointerSegment(k)}`, value: v });
}

/**
 * Adds `field: value` under the pod's nodeAffinity, creating the affinity and nodeAffinity it
 * lacks; false when the pod already has the field (the caller merges into it).
 */
function addNodeAffinityField(
  ops: JsonPatchOp[],
  pod: Pod,
  field: "requiredDuringSchedulingIgnoredDuringExecution" | "preferredDuringSchedulingIgnoredDuringExecution",
  value: unknown,
): boolean {
  const affinity = pod.spec.affinity;
  if (affinity === undefined)
    ops.push({ op: "add", path: AFFINITY, value: { nodeAffinity: { [field]: value } } });
  else if (affinity.nodeAffinity === undefined)
    ops.push({ op: "add", path: NODE_AFFINITY, value: { [field]: value } });
  else if (affinity.nodeAffinity[field] === undefined)
    ops.push({ op: "add", path: `${NODE_AFFINITY}/${field}`, value });
  else return false;
  return true;
}

function addRequired(ops: JsonPatchOp[], pod: Pod, req: NodeSelectorRequirement): void {
  const term = { matchExpressions: [req] };
  const required = { nodeSelectorTerms: [term] };
  if (addNodeAffinityField(ops, pod, "requiredDuringSchedulingIgnoredDuringExecution", required)) return;
  const existing = pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (existing === undefined) return;
  const terms = existing.nodeSelectorTerms;
  // terms ORed together: the requirement must be ANDed into each one to hold for the pod.
  if ((terms as typeof terms | undefined) === undefined || terms.length === 0) {
    ops.push({ op: "add", path: `${REQUIRED}/nodeSelectorTerms`, value: [term] });
    return;
  }
  terms.forEach((t, i) => {
    const exprs = t.matchExpressions;
    const at = `${REQUIRED}/nodeSelectorTerms/${i}/matchExpressions`;
    if (exprs === undefined) ops.push({ op: "add", path: at, value: [req] });
    else if (!exprs.some((e) => sameRequirement(e, req)))
      ops.push({ op: "add", path: `${at}/-`, value: req });
  });
}

function addPreferred(ops: JsonPatchOp[], pod: Pod, req: NodeSelectorRequirement): void {
  const pref = { weight: PREFERRED_WEIGHT, preference: { matchExpressions: [req] } };
  if (addNodeAffinityField(ops, pod, "preferredDuringSchedulingIgnoredDuringExecution", [pref])) return;
  const existing = pod.spec.affinity?.nodeAffinity?.preferredDuringSchedulingIgnoredDuringExecution;
  if (existing === undefined) return;
  const present = existing.some(
    (p) =>
      p.weight === PREFERRED_WEIGHT &&
      (p.preference.matchExpressions ?? []).length === 1 &&
      p.preference.matchExpressions?.[0] !== undefined &&
      sameRequirement(p.preference.matchExpressions[0], req),
  );
  if (!present) ops.push({ op: "add", path: `${PREFERRED}/-`, value: pref });
}
