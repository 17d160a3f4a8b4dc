// Is a real pod about to be created for this AdmissionReview? `/mutate` cannot authenticate its
// caller on EKS (the apiserver presents no client certificate to webhooks), so a forged review
// must not be able to spend a workload's on-demand slots (issue 16, docs/spot-placement.md
// "Threat model"). An on-demand slot is only granted while the pod's controller (ReplicaSet or
// StatefulSet, read fresh from the apiserver) has room for another pod: spec.replicas above its
// live pods plus the reservations already in flight. A review the controller has no room for is
// answered spot and recorded nowhere. Fresh reads are rate-limited per source address.
// The allocator counts the owner's live pods (pod watch, or a consistent list when in doubt).
import type { KubeClient } from "../kube/port.ts";
import { isNotFound } from "../kube/port.ts";
import type { Clock } from "../shared/clock.ts";
import { POD_TEMPLATE_HASH_LABEL } from "./constants.ts";

/** The pod's controller as its ownerReference names it. */
export interface OwnerRef {
  kind: "ReplicaSet" | "StatefulSet";
  namespace: string;
  name: string;
  uid: string;
  /** The pod's pod-template-hash (a ReplicaSet's pods carry its own; issue 42). */
  revision?: string;
}

/** Token bucket per source address: how many fresh verification reads a caller may cause. */
export class SourceLimiter {
  readonly #buckets = new Map<string, { tokens: number; at: number }>();
  readonly #rate: number;
  readonly #burst: number;
  readonly #clock: Clock;

  constructor(clock: Clock, perSecond = 10, burst = 20) {
    this.#clock = clock;
    this.#rate = perSecond;
    this.#burst = burst;
  }

  take(source: string): boolean {
    const now = this.#clock.now();
    let b = this.#buckets.get(source);
    if (!b) {
      if (this.#buckets.size >= 10_000) this.#buckets.clear();
      b = { tokens: this.#burst, at: now };
      this.#buckets.set(source, b);
    }
    b.tokens = Math.min(this.#burst, b.tokens + ((now - b.at) / 1000) * this.#rate);
    b.at = now;
    if (b.tokens < 1) return false;
    b.tokens--;
    return true;
  }
}

export interface BackingOptions {
  kube: KubeClient;
  limiter: SourceLimiter;
}

export class BackingVerifier {
  readonly #o: BackingOptions;

  constructor(opts: BackingOptions) {
    this.#o = opts;
  }

  /**
   * Whether `source` may still cause fresh reads: one token per batch in which it asks for an
   * on-demand slot. A source over its limit gets no on-demand slot; its budget is its own, so it
   * cannot take away another source's (the apiserver's) verification.
   */
  admits(source: string): boolean {
    return this.#o.limiter.take(source);
  }

  /**
   * The controller's desired replicas, read fresh: 0 when the owner does not exist (or is another
   * object of the same name); undefined when the apiserver cannot tell (availability first: then
   * the review counts as backed). The caller checks the source's budget first (`admits`).
   */
  async read(owner: OwnerRef): Promise<number | undefined> {
    try {
      const obj = await this.#o.kube.get(owner.kind, owner.name, owner.namespace);
      if (obj.metadata.uid !== owner.uid) return 0;
      // A Deployment's ReplicaSet creates pods of its own template only: another hash is no pod of it.
      const hash = owner.kind === "ReplicaSet" ? obj.metadata.labels?.[POD_TEMPLATE_HASH_LABEL] : undefined;
      if (hash !== undefined && owner.revision !== hash) return 0;
      return obj.spec.replicas ?? 1;
    } catch (err) {
      if (isNotFound(err)) return 0;
      return undefined;
    }
  }

  /** `read`, charged to `source`: 0 when the source exhausted its verification budget. */
  async desired(owner: OwnerRef, source: string): Promise<number | undefined> {
    return this.admits(source) ? this.read(owner) : 0;
  }
}
