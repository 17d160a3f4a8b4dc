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
import { resourceKey, spotPolicyFromResource, type Converted } from "../policy/spot-resource.ts";
import { workloadKey, type SpotPolicy, type WorkloadRef } from "../policy/spot.ts";
import { spotPoliciesInForce, type PolicyConflict, type PolicyInvalid } from "../policy/in-force.ts";
import type { PolicySource } from "./policy-source.ts";

/** Why a SpotPolicy does not validate (namespace/name; `keptPrevious`: its last valid spec decides). */
export type PolicyProblem = PolicyInvalid;

interface Entry {
  cr: SpotPolicyResource;
  /** The CR converted (once per change of it: a relist does not validate every CR again per CR). */
  converted: Converted<SpotPolicy>;
  /** The CR's policy: its own, or its last valid one. */
  policy: SpotPolicy | undefined;
}

/**
 * SpotPolicy CRs → policies by workload, decided by the one rule every reader follows
 * (`spotPoliciesInForce`, src/policy/in-force.ts): an invalid CR (the CRD's schema makes it
 * rare: a CRD without it, an older version) keeps its last valid policy; two CRs on one workload:
 * the one created first decides, the other is in conflict (never a pick that flips on a relist).
 */
export class SpotPolicyIndex {
  readonly #entries = new Map<string, Entry>();
  /** Per workload key, the CRs whose policy (own or last valid) targets it. */
  readonly #byTarget = new Map<string, Set<string>>();
  readonly #byWorkload = new Map<string, { policy: SpotPolicy; key: string }>();
  readonly #problems = new Map<string, PolicyProblem>();
  readonly #conflicts = new Map<string, PolicyConflict>();
  #version = 0;

  upsert(cr: SpotPolicyResource): void {
    const key = resourceKey(cr);
    const before = this.#entries.get(key);
    const r = spotPolicyFromResource(cr);
    const policy = r.ok ? r.policy : before?.policy;
    this.#entries.set(key, { cr, converted: r, policy });
    if (r.ok) this.#problems.delete(key);
    else this.#problems.set(key, { key, errors: r.errors, keptPrevious: policy !== undefined });
    this.#retarget(key, before?.policy, policy);
  }

  delete(cr: SpotPolicyResource): void {
    const key = resourceKey(cr);
    const before = this.#entries.get(key);
    if (!before) return;
    this.#entries.delete(key);
    this.#problems.delete(key);
    this.#retarget(key, before.policy, undefined);
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

  /**
   * A CR moved from one workload to another (or appeared, or went): the rule decides again for
   * those workloads only — it decides per workload, so a relist of N CRs costs N small decisions.
   */
  #retarget(key: string, from: SpotPolicy | undefined, to: SpotPolicy | undefined): void {
    const targets = new Set<string>();
    for (const [p, add] of [
      [from, false],
      [to, true],
    ] as const) {
      if (!p) continue;
      const wk = workloadKey(p.workload);
      targets.add(wk);
      const keys = this.#byTarget.get(wk) ?? new Set<string>();
      if (add) keys.add(key);
      else keys.delete(key);
      if (keys.size > 0) this.#byTarget.set(wk, keys);
      else this.#byTarget.delete(wk);
    }
    this.#conflicts.delete(key);
    let changed = false;
    for (const wk of targets) changed = this.#decide(wk) || changed;
    if (changed) this.#version++;
  }

  /** The rule over one workload's CRs; whether the policy in force for it changed. */
  #decide(wk: string): boolean {
    const keys = [...(this.#byTarget.get(wk) ?? [])];
    const entries = keys.flatMap((k) => {
      const e = this.#entries.get(k);
      return e ? [[k, e] as const] : [];
    });
    const decided = spotPoliciesInForce(
      entries.map(([, e]) => e.cr),
      new Map(entries.flatMap(([k, e]) => (e.policy ? [[k, e.policy] as const] : []))),
      (cr) => this.#entries.get(resourceKey(cr))?.converted ?? spotPolicyFromResource(cr),
    );
    for (const k of keys) this.#conflicts.delete(k);
    for (const c of decided.conflicts) this.#conflicts.set(c.key, c);
    const before = this.#byWorkload.get(wk);
    const policy = decided.policies[0];
    const next = policy ? { policy, key: decided.decidedBy.get(wk) ?? "" } : undefined;
    if (next) this.#byWorkload.set(wk, next);
    else this.#byWorkload.delete(wk);
    return JSON.stringify(before) !== JSON.stringify(next);
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
