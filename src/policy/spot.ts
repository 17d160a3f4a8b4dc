// Spot placement policies: the model the webhook, its repair, the console, the API, /metrics and
// the UI share, and the JSON shape core serves (a SpotPolicySet). Its validator is
// validate-spot.ts, the on-demand arithmetic on-demand-target.ts.
import { SPOT_TARGET_KINDS, type SpotStrategy, type SpotTargetKind } from "../objects/policy-crds.ts";

/** The CR's names (objects/policy-crds.ts): one list of strategies and workload kinds. */
export type Strategy = SpotStrategy;
/** The repair's mode for a policy: on, off, or planning only (ADR 0006, "Adoption"). */
export type RepairMode = boolean | "dry-run";
export type WorkloadKind = SpotTargetKind;
export const WORKLOAD_KINDS: readonly WorkloadKind[] = SPOT_TARGET_KINDS;

export interface WorkloadRef {
  namespace: string;
  kind: WorkloadKind;
  name: string;
}

export interface SpotPolicy {
  workload: WorkloadRef;
  /** The first `threshold` live pods run on-demand (the ASG "base"). */
  threshold: number;
  /** Require: spot pods must land on spot. Prefer: spot is preferred, on-demand is the fallback. */
  strategy: Strategy;
  /** Share (0–100) of the pods above `threshold` that also run on-demand. Default 0. */
  percentAboveBase?: number;
  /**
   * Repair (ADR 0006): when the workload has fewer or more on-demand pods than its target and no
   * admission will fix it, evict one pod at a time so its replacement takes the right slot — also
   * for pods that ran before the policy (adoption). Default true. `"dry-run"`: plan only — the
   * evictions it would make are reported (Events, API), nothing is labelled or evicted.
   */
  repair?: RepairMode;
  /**
   * Prefer only: how long the on-demand fallback stays open once spot capacity looks unavailable
   * (ADR 0007); absent = the webhook's default (10 min).
   */
  fallbackWindowSeconds?: number;
}

/** Bounds of `percentAboveBase` (the CRD's schema, policy/crd-schema.ts, and the editor's hints). */
export const PERCENT_ABOVE_BASE_RANGE = [0, 100] as const;

/** Bounds of `fallbackWindowSeconds` (the CRD's schema says the same: policy/crd-schema.ts). */
export const FALLBACK_WINDOW_RANGE = [60, 86_400] as const;

/** What core serves (and the file/HTTP policy sources read). */
export interface SpotPolicySet {
  apiVersion: "wave.sh/v1alpha1";
  kind: "SpotPolicySet";
  /** Opaque version of the set, for logs and conditional pulls. */
  revision?: string;
  policies: SpotPolicy[];
}

export const POLICY_SET_API_VERSION = "wave.sh/v1alpha1";

/** A workload's identity in maps and stored keys (`shop/Deployment/web`): never shown to people. */
export function workloadKey(ref: WorkloadRef): string {
  return `${ref.namespace}/${ref.kind}/${ref.name}`;
}

/**
 * A workload as Wave writes it wherever people read it — the CLI's tables, the console's pages,
 * the API's messages and audit: `deployment/shop/web`, the form `wave spot set` takes (issue 43).
 */
export function workloadName(ref: { kind: string; namespace: string; name: string }): string {
  return `${ref.kind.toLowerCase()}/${ref.namespace}/${ref.name}`;
}

/** `workloadName` of a `workloadKey` (a stored policy's key); another key is returned as it is. */
export function workloadNameOfKey(key: string): string {
  const [namespace, kind, name, ...rest] = key.split("/");
  return namespace && kind && name && rest.length === 0 ? workloadName({ kind, namespace, name }) : key;
}

/** Whether the ledger must also count spot pods (only the percentage needs the total). */
export function tracksTotal(policy: Pick<SpotPolicy, "percentAboveBase">): boolean {
  return (policy.percentAboveBase ?? 0) > 0;
}

/** Policies indexed by workload for O(1) lookup on the admission path. */
export class PolicyIndex {
  readonly revision: string | undefined;
  readonly size: number;
  readonly #byKey: Map<string, SpotPolicy>;

  constructor(set: SpotPolicySet) {
    this.revision = set.revision;
    this.#byKey = new Map(set.policies.map((p) => [workloadKey(p.workload), p]));
    this.size = this.#byKey.size;
  }

  get(ref: WorkloadRef): SpotPolicy | undefined {
    return this.#byKey.get(workloadKey(ref));
  }

  all(): SpotPolicy[] {
    return [...this.#byKey.values()];
  }
}
