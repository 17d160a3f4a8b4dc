// The webhook's SpotPolicies from the cluster itself (issue 31): its own informer over the
// SpotPolicy custom resources, so no admission waits on core and no token travels to core for
// them. With core stopped, or the apiserver briefly away, the informer's cache — the last
// policies it saw — stays in force. The pure part (`SpotPolicyIndex`) turns the CRs into the
// lookup admission and repair read.
import { Informer } from "../kube/informer/informer.ts";
import type { KubeClient } from "../kube/port.ts";
import type { SpotPolicyResource } from "../objects/policy-crds.ts";
import { realClock, type Clock } from "../shared/clock.ts";
import { silentLogger, type Logger } from "../shared/log.ts";
import { resourceKey, spotPolicyFromResource } from "../policy/spot-resource.ts";
import { workloadKey, type SpotPolicy, type WorkloadRef } from "../policy/spot.ts";
import { spotPoliciesInForce, type PolicyConflict, type PolicyInvalid } from "../policy/in-force.ts";
import type { PolicySource } from "./policy-source.ts";

/** Why a SpotPolicy does not validate (namespace/name; `keptPrevious`: its last valid spec decides). */
export type PolicyProblem = PolicyInvalid;

interface Entry {
  cr: SpotPolicyResource;
  /** The CR's policy: its own, or its last valid one. */
  policy: SpotPolicy | undefined;
}

/**
 * SpotPolicy CRs → policies by workload, decided by the one rule every reader follows
 * (`spotPoliciesInForce`, src/policy/in-force.ts): an invalid CR (the apiserver's CEL rules make it
 * rare: a CRD without them, an older version) keeps its last valid policy; two CRs on one workload:
 * the one created first decides, the other is in conflict (never a pick that flips on a relist).
 */
export class SpotPolicyIndex {
  readonly #entries = new Map<string, Entry>();
  #byWorkload = new Map<string, { policy: SpotPolicy; key: string }>();
  #problems = new Map<string, PolicyProblem>();
  #conflicts = new Map<string, PolicyConflict>();
  #version = 0;

  upsert(cr: SpotPolicyResource): void {
    const key = resourceKey(cr);
    const r = spotPolicyFromResource(cr);
    this.#entries.set(key, { cr, policy: r.ok ? r.policy : this.#entries.get(key)?.policy });
    this.#rebuild();
  }

  delete(cr: SpotPolicyResource): void {
    if (this.#entries.delete(resourceKey(cr))) this.#rebuild();
  }

  lookup(ref: WorkloadRef): SpotPolicy | undefined {
    return this.#byWorkload.get(workloadKey(ref))?.policy;
  }

  all(): SpotPolicy[] {
    return [...this.#byWorkload.values()].map((e) => e.policy);
  }

  /** The CR (namespace/name) whose policy decides for a workload. */
  resourceFor(ref: WorkloadRef): string | undefined {
    return this.#byWorkload.get(workloadKey(ref))?.key;
  }

  /** The CR stored under namespace/name. */
  resource(key: string): SpotPolicyResource | undefined {
    return this.#entries.get(key)?.cr;
  }

  resources(): SpotPolicyResource[] {
    return [...this.#entries.values()].map((e) => e.cr);
  }

  /** Why a CR does not validate (its last valid version may still decide). */
  problem(key: string): PolicyProblem | undefined {
    return this.#problems.get(key);
  }

  problems(): PolicyProblem[] {
    return [...this.#problems.values()];
  }

  /** The CR is not in force: another one on its workload was created first. */
  conflict(key: string): PolicyConflict | undefined {
    return this.#conflicts.get(key);
  }

  conflicts(): PolicyConflict[] {
    return [...this.#conflicts.values()];
  }

  /** Changes with every change of the policies in force (the source's revision). */
  get version(): number {
    return this.#version;
  }

  get size(): number {
    return this.#byWorkload.size;
  }

  #rebuild(): void {
    const lastValid = new Map<string, SpotPolicy>();
    for (const [key, e] of this.#entries) if (e.policy) lastValid.set(key, e.policy);
    const decided = spotPoliciesInForce(
      [...this.#entries.values()].map((e) => e.cr),
      lastValid,
    );
    const byWorkload = new Map<string, { policy: SpotPolicy; key: string }>();
    for (const policy of decided.policies) {
      const wk = workloadKey(policy.workload);
      byWorkload.set(wk, { policy, key: decided.decidedBy.get(wk) ?? "" });
    }
    const changed = JSON.stringify([...byWorkload]) !== JSON.stringify([...this.#byWorkload]);
    this.#byWorkload = byWorkload;
    this.#problems = new Map(decided.invalid.map((p) => [p.key, p]));
    this.#conflicts = new Map(decided.conflicts.map((c) => [c.key, c]));
    if (changed) this.#version++;
  }
}

export interface CrdPolicySourceOptions {
  kube: KubeClient;
  clock?: Clock;
  logger?: Logger;
  /** Each change of the policies in force (metrics: wave_spot_policy_updates_total). */
  onChange?: () => void;
}

/** PolicySource over the SpotPolicy informer; `start` resolves once the first list is in. */
export class CrdPolicySource implements PolicySource {
  readonly index = new SpotPolicyIndex();
  readonly informer: Informer<"SpotPolicy">;
  readonly #log: Logger;
  readonly #stop = new AbortController();
  readonly #clock: Clock;

  constructor(o: CrdPolicySourceOptions) {
    this.#clock = o.clock ?? realClock;
    this.#log = (o.logger ?? silentLogger).child({
      component: "policy-source",
      origin: "spotpolicies.wave.sh",
    });
    this.informer = new Informer({
      client: o.kube,
      kind: "SpotPolicy",
      clock: this.#clock,
      log: this.#log,
    });
    const changed = (before: number): void => {
      if (this.index.version !== before) o.onChange?.();
    };
    this.informer.on("add", (cr) => {
      const v = this.index.version;
      this.index.upsert(cr);
      this.#report(cr);
      changed(v);
    });
    this.informer.on("update", (cr, old) => {
      if (cr === old) return;
      const v = this.index.version;
      this.index.upsert(cr);
      this.#report(cr);
      changed(v);
    });
    this.informer.on("delete", (cr) => {
      const v = this.index.version;
      this.index.delete(cr);
      changed(v);
    });
  }

  /**
   * Starts the informer; resolves true once its first list is in, false if that takes longer than
   * `waitMs` (admission then goes on with no policy until it is: never blocks start-up).
   */
  async start(waitMs = 10_000): Promise<boolean> {
    this.informer.start(this.#stop.signal);
    const timeout = new AbortController();
    const timer = this.#clock.sleep(waitMs, timeout.signal).then(
      () => false,
      () => false,
    );
    const ok = await Promise.race([this.informer.synced.then(() => true), timer]);
    timeout.abort();
    return ok;
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    await this.informer.stop();
  }

  lookup(ref: WorkloadRef): SpotPolicy | undefined {
    return this.index.lookup(ref);
  }

  all(): SpotPolicy[] {
    return this.index.all();
  }

  get revision(): string | undefined {
    return this.informer.hasSynced ? `crd-${this.index.version}` : undefined;
  }

  #report(cr: SpotPolicyResource): void {
    const conflict = this.index.conflict(resourceKey(cr));
    if (conflict) this.#log.warn("SpotPolicy not in force", { policy: conflict.key, why: conflict.message });
    const p = this.index.problem(resourceKey(cr));
    if (p)
      this.#log.warn("SpotPolicy not valid; its last valid version, if any, stays in force", {
        policy: p.key,
        errors: p.errors,
        keptPrevious: p.keptPrevious,
      });
  }
}
