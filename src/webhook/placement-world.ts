// Deployments on the in-memory apiserver with everything the webhook trusts and nothing it does
// not: real ReplicaSets (uids, spec.replicas), a ReplicaSet controller that creates their pods
// through review() as the apiserver does — from the apiserver's address, with the controller's
// ownerReference — the real pod watch, slot allocator, backing verifier and repair. A forger
// sends AdmissionReviews of its own from another address. What counts is where the real pods end
// up. Shared by the forged-review tests (forged.test.ts) and the placement fuzz target
// (bench/fuzz/placement.ts), issue 32.
import { MemoryKube } from "../kube/memory/memory.ts";
import { jsonPatch } from "../kube/memory/patch.ts";
import type { OwnerReference, Pod, ReplicaSet } from "../objects/kube.ts";
import { ASSIGNMENT_LABEL, LEDGER_LABEL, SLOT_LABEL } from "../objects/wave.ts";
import { FakeClock } from "../shared/clock.ts";
import type { AdmissionRequest, AdmissionReviewResponse, JsonPatchOp } from "./admission.ts";
import { SlotAllocator } from "./allocator.ts";
import { BackingVerifier, SourceLimiter } from "./backing.ts";
import { DELETION_COST_ANNOTATION, POD_TEMPLATE_HASH_LABEL } from "./constants.ts";
import { ledgerId } from "./ledger.ts";
import { createSpotMetrics, type SpotMetrics } from "./metrics.ts";
import { PodCache } from "./pod-cache.ts";
import { InMemoryPolicySource, type PolicySource } from "./policy-source.ts";
import type { SpotPolicy, WorkloadRef } from "../policy/spot.ts";
import { SpotRepair, type SpotRepairOptions } from "./repair.ts";
import { review } from "./review.ts";

/** Where the apiserver's reviews come from, and a forging pod's address. */
export const APISERVER = "172.18.0.1";
export const FORGER = "10.9.9.9";
export const APP_NS = "shop";
const LEDGER_NS = "wave-spot-ledgers";

export interface WorldOptions {
  /** The Deployments with a policy (all share it). Default ["api"]. */
  deployments?: string[];
  threshold: number;
  strategy?: SpotPolicy["strategy"];
  percentAboveBase?: number;
  /** Slots per ledger (SlotAllocator maxEntries). */
  maxEntries?: number;
  /** Run the spot repair on each `tick` (grace and cooldown 5 s, the defaults). */
  repair?: boolean;
  /**
   * Where admission and repair read the policies (e.g. a CrdPolicySource over `kube`, given the
   * world's kube and clock); default: the fixed policies of `deployments`.
   */
  source?: (kube: MemoryKube, clock: FakeClock) => PolicySource;
  /** The repair's node capacities: with them it also adopts and reports each workload's status. */
  nodes?: SpotRepairOptions["nodes"];
}

export class PlacementWorld {
  readonly clock = new FakeClock();
  readonly kube = new MemoryKube({ clock: this.clock });
  readonly metrics: SpotMetrics = createSpotMetrics();
  readonly pods: PodCache;
  readonly allocator: SlotAllocator;
  readonly policies: SpotPolicy[];
  readonly repair: SpotRepair | undefined;
  /** Where admission and repair read the policies. */
  readonly source: PolicySource;
  /** Answers to the apiserver's reviews that were not placed (fallback notes), by reason. */
  readonly unplaced: string[] = [];
  readonly #rs = new Map<string, ReplicaSet>();
  #seq = 0;
  #forged = 0;

  private constructor(o: WorldOptions) {
    this.pods = new PodCache({ kube: this.kube, clock: this.clock });
    this.allocator = new SlotAllocator({
      kube: this.kube,
      namespace: LEDGER_NS,
      clock: this.clock,
      pods: this.pods,
      ...(o.maxEntries === undefined ? {} : { maxEntries: o.maxEntries }),
      backing: new BackingVerifier({ kube: this.kube, limiter: new SourceLimiter(this.clock) }),
    });
    this.policies = (o.deployments ?? ["api"]).map((name) => ({
      workload: { namespace: APP_NS, kind: "Deployment", name },
      threshold: o.threshold,
      strategy: o.strategy ?? "Prefer",
      ...(o.percentAboveBase === undefined ? {} : { percentAboveBase: o.percentAboveBase }),
    }));
    this.source =
      o.source?.(this.kube, this.clock) ??
      new InMemoryPolicySource({
        apiVersion: "wave.sh/v1alpha1",
        kind: "SpotPolicySet",
        policies: this.policies,
      });
    this.repair = o.repair
      ? new SpotRepair({
          kube: this.kube,
          pods: this.pods,
          policies: this.source,
          ...(o.nodes ? { nodes: o.nodes } : {}),
          allocator: this.allocator,
          clock: this.clock,
          metrics: this.metrics,
          identity: "webhook-0",
        })
      : undefined;
  }

  static async create(o: WorldOptions): Promise<PlacementWorld> {
    const w = new PlacementWorld(o);
    w.pods.start();
    await w.pods.synced;
    for (let i = 0; i < 100 && !w.pods.ready; i++) await w.settle();
    if (!w.pods.ready) throw new Error("the pod watch never became ready");
    return w;
  }

  async stop(): Promise<void> {
    await this.pods.stop();
  }

  workload(deployment = "api"): WorkloadRef {
    return { namespace: APP_NS, kind: "Deployment", name: deployment };
  }

  /** Lets the watch and queued batches run (no time passes). */
  async settle(): Promise<void> {
    for (let i = 0; i < 5; i++) await new Promise<void>((r) => setImmediate(r));
  }

  /** The ReplicaSet `<deployment>-<hash>` at `replicas` (created on first use). */
  async scale(hash: string, replicas: number, deployment = "api"): Promise<ReplicaSet> {
    const name = `${deployment}-${hash}`;
    const current = this.#rs.get(name);
    const rs = current
      ? await this.kube.replace(
          "ReplicaSet",
          { ...current, spec: { ...current.spec, replicas } },
          { namespace: APP_NS },
        )
      : await this.kube.create(
          "ReplicaSet",
          {
            apiVersion: "apps/v1",
            kind: "ReplicaSet",
            metadata: {
              name,
              namespace: APP_NS,
              labels: { app: deployment, [POD_TEMPLATE_HASH_LABEL]: hash },
            },
            spec: {
              replicas,
              selector: { matchLabels: { app: deployment, [POD_TEMPLATE_HASH_LABEL]: hash } },
            },
          },
          { namespace: APP_NS },
        );
    this.#rs.set(name, rs);
    return rs;
  }

  /** The AdmissionReview of a pod of `<deployment>-<hash>`; `owner` overrides its ownerReference. */
  podReview(hash: string, deployment = "api", owner?: Partial<OwnerReference> | null): AdmissionRequest {
    const rs = this.#rs.get(`${deployment}-${hash}`);
    const ref: OwnerReference = {
      apiVersion: "apps/v1",
      kind: "ReplicaSet",
      name: `${deployment}-${hash}`,
      uid: rs?.metadata.uid ?? "",
      controller: true,
      blockOwnerDeletion: true,
    };
    // A key given as undefined is left out (a reference without a uid), as JSON would drop it.
    const merged = Object.fromEntries(
      Object.entries({ ...ref, ...owner }).filter(([, v]: [string, unknown]) => v !== undefined),
    ) as unknown as OwnerReference;
    const n = this.#seq++;
    return {
      uid: `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`,
      kind: { group: "", version: "v1", kind: "Pod" },
      resource: { group: "", version: "v1", resource: "pods" },
      namespace: APP_NS,
      operation: "CREATE",
      object: {
        apiVersion: "v1",
        kind: "Pod",
        metadata: {
          generateName: `${deployment}-${hash}-`,
          namespace: APP_NS,
          labels: { app: deployment, [POD_TEMPLATE_HASH_LABEL]: hash },
          ...(owner === null ? {} : { ownerReferences: [merged] }),
        },
        spec: { containers: [{ name: "app", image: "registry.local/app:1" }] },
      },
    };
  }

  /** Answers one review as the webhook's server would for a caller at `source`. */
  answer(req: AdmissionRequest, source: string): Promise<AdmissionReviewResponse> {
    return review(req, {
      policies: this.source,
      allocator: this.allocator,
      clock: this.clock,
      metrics: this.metrics,
      source,
    });
  }

  /** A forged review (never followed by a pod), from the forger's address. */
  forge(req: AdmissionRequest, source = FORGER): Promise<AdmissionReviewResponse> {
    this.#forged++;
    return this.answer(req, source);
  }

  get forged(): number {
    return this.#forged;
  }

  /** Live pods (the apiserver's truth) of the Deployment, or of one of its revisions. */
  async live(deployment = "api", hash?: string): Promise<Pod[]> {
    const all = (await this.kube.list("Pod", { namespace: APP_NS })).items;
    return all.filter(
      (p) =>
        p.metadata.deletionTimestamp === undefined &&
        p.metadata.labels?.app === deployment &&
        (hash === undefined || p.metadata.labels[POD_TEMPLATE_HASH_LABEL] === hash),
    );
  }

  async onDemand(deployment = "api", hash?: string): Promise<number> {
    return (await this.live(deployment, hash)).filter(
      (p) => p.metadata.labels?.[ASSIGNMENT_LABEL] === "on-demand",
    ).length;
  }

  /** Assignment of every live pod by name (what a forged review must never change). */
  async placements(): Promise<Map<string, string>> {
    const all = (await this.kube.list("Pod", { namespace: APP_NS })).items;
    return new Map(
      all
        .filter((p) => p.metadata.deletionTimestamp === undefined)
        .map((p) => [p.metadata.name ?? "", p.metadata.labels?.[ASSIGNMENT_LABEL] ?? "unplaced"]),
    );
  }

  /** Evictions the repair made so far. */
  get evictions(): number {
    return this.repair?.actions.filter((a) => a.outcome === "evicted").length ?? 0;
  }

  /**
   * The ReplicaSet controller's pass: each ReplicaSet's missing pods are admitted (one review each,
   * from the apiserver's address) and created as patched; extra pods are deleted, lowest
   * pod-deletion-cost first (spot before on-demand), as the real controller ranks them.
   */
  async sync(): Promise<void> {
    const all = (await this.kube.list("Pod", { namespace: APP_NS })).items.filter(
      (p) => p.metadata.deletionTimestamp === undefined,
    );
    for (const [name, rs] of this.#rs) {
      const current = await this.kube.get("ReplicaSet", name, APP_NS);
      const owned = all.filter((p) => p.metadata.ownerReferences?.some((o) => o.uid === rs.metadata.uid));
      const want = current.spec.replicas ?? 1;
      const hash = rs.metadata.labels?.[POD_TEMPLATE_HASH_LABEL] ?? "";
      const deployment = rs.metadata.labels?.app ?? "api";
      for (let i = owned.length; i < want; i++) await this.#create(hash, deployment);
      const cost = (p: Pod): number => Number(p.metadata.annotations?.[DELETION_COST_ANNOTATION] ?? "0");
      const extra = [...owned].sort((a, b) => cost(a) - cost(b)).slice(0, Math.max(0, owned.length - want));
      for (const p of extra) await this.kube.delete("Pod", p.metadata.name ?? "", { namespace: APP_NS });
    }
    await this.settle();
  }

  async #create(hash: string, deployment: string): Promise<void> {
    const req = this.podReview(hash, deployment);
    const res = await this.answer(req, APISERVER);
    const patch = res.response.patch;
    const ops = patch ? (JSON.parse(Buffer.from(patch, "base64").toString("utf8")) as JsonPatchOp[]) : [];
    const pod = jsonPatch(req.object as Pod, ops);
    const labels = pod.metadata.labels ?? {};
    if (labels[SLOT_LABEL] === undefined) this.unplaced.push(res.response.warnings?.join("; ") ?? "unplaced");
    pod.metadata.name = `${deployment}-${hash}-${this.#seq++}`;
    delete pod.metadata.generateName;
    pod.spec.nodeName = "n1";
    pod.status = { phase: "Running", conditions: [{ type: "Ready", status: "True" }] };
    const created = await this.kube.create("Pod", pod, { namespace: APP_NS });
    const id = labels[LEDGER_LABEL];
    if (id === undefined) return;
    for (let i = 0; i < 100; i++) {
      if (this.pods.view(id).pods.some((p) => p.metadata.name === created.metadata.name)) return;
      await this.settle();
    }
    throw new Error(`the pod watch never saw ${created.metadata.name}`);
  }

  /** Time passes: `ms` on the clock, then the ReplicaSet controller and (each second) the repair. */
  async tick(ms: number, withRepair = true): Promise<void> {
    const before = Math.floor(this.clock.now() / 1000);
    await this.clock.advance(ms);
    await this.settle();
    await this.sync();
    if (withRepair && this.repair && Math.floor(this.clock.now() / 1000) !== before) await this.repair.tick();
    await this.settle();
  }

  /** The ledger of the Deployment as the allocator reads it now (reconciled, nothing changed). */
  async ledger(deployment = "api") {
    const policy = this.policies.find((p) => p.workload.name === deployment);
    if (!policy) throw new Error(`no policy for ${deployment}`);
    return this.allocator.update(this.workload(deployment), policy);
  }

  ledgerId(deployment = "api"): string {
    return ledgerId(this.workload(deployment));
  }
}
