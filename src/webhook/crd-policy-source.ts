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
import type { PolicySource } from "./policy-source.ts";

/** Why a SpotPolicy is not in force (or is, from its last valid version). */
export interface PolicyProblem {
  /** namespace/name of the CR. */
  key: string;
  errors: string[];
  /** Its previous valid spec still decides (last known good). */
  keptPrevious: boolean;
}

interface Entry {
  cr: SpotPolicyResource;
  /** The policy in force for this CR: its own, or its last valid one. */
  policy: SpotPolicy | undefined;
  problem: PolicyProblem | undefined;
}

/**
 * SpotPolicy CRs → policies by workload. An invalid CR (the apiserver's CEL rules make it rare:
 * a CRD without them, an older version) keeps its last valid policy. Two CRs on one workload: the
 * older decides, the other is reported (never an arbitrary pick that flips on a relist).
 */
export class SpotPolicyIndex {
  readonly #entries = new Map<string, Entry>();
  #byWorkload = new Map<string, { policy: SpotPolicy; key: string }>();
  #problems = new Map<string, PolicyProblem>();
  #version = 0;

  upsert(cr: SpotPolicyResource): void {
    const key = resourceKey(cr);
    const before = this.#entries.get(key);
    const r = spotPolicyFromResource(cr);
    const entry: Entry = r.ok
      ? { cr, policy: r.policy, problem: undefined }
      : {
          cr,
          policy: before?.policy,
          problem: { key, errors: r.errors, keptPrevious: before?.policy !== undefined },
        };
    this.#entries.set(key, entry);
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

  problem(key: string): PolicyProblem | undefined {
    return this.#problems.get(key);
  }

  problems(): PolicyProblem[] {
    return [...this.#problems.values()];
  }

  /** Changes with every change of the policies in force (the source's revision). */
  get version(): number {
    return this.#version;
  }

  get size(): number {
    return this.#byWorkload.size;
  }

  #rebuild(): void {
    const byWorkload = new Map<string, { policy: SpotPolicy; key: string }>();
    const problems = new Map<string, PolicyProblem>();
    const entries = [...this.#entries.entries()].sort(
      ([ka, a], [kb, b]) =>
        (a.cr.metadata.creationTimestamp ?? "").localeCompare(b.cr.metadata.creationTimestamp ?? "") ||
        ka.localeCompare(kb),
    );
    for (const [key, e] of entries) {
      if (e.problem) problems.set(key, e.problem);
      if (!e.policy) continue;
      const wk = workloadKey(e.policy.workload);
      const first = byWorkload.get(wk);
      if (first) {
        const errors = [
          `${e.policy.workload.kind} ${e.policy.workload.name} already has SpotPolicy ${first.key}, which decides`,
        ];
        problems.set(key, { key, errors, keptPrevious: false });
        continue;
      }
      byWorkload.set(wk, { policy: e.policy, key });
    }
    const changed = JSON.stringify([...byWorkload]) !== JSON.stringify([...this.#byWorkload]);
    this.#byWorkload = byWorkload;
    this.#problems = problems;
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
    const p = this.index.problem(resourceKey(cr));
    if (p)
      this.#log.warn("SpotPolicy not valid; its last valid version, if any, stays in force", {
        policy: p.key,
        errors: p.errors,
        keptPrevious: p.keptPrevious,
      });
  }
}
