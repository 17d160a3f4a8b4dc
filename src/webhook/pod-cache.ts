// The webhook's view of the pods it placed: one informer (list + watch) on every pod carrying a
// ledger label, indexed by ledger id. It lets the ledger follow pods as they come and go — a
// deletion is seen as a watch event, not 60 s later — without a pod list per admission, and it is
// what the repair controller reads. Pods are trimmed to what counting and repair need.
import { Informer } from "../kube/informer/informer.ts";
import type { Pod } from "../objects/kube.ts";
import type { KubeClient } from "../kube/port.ts";
import type { Clock } from "../shared/clock.ts";
import { silentLogger, type Logger } from "../shared/log.ts";
import { requiresSpot } from "./constants.ts";
import { isLivePod } from "./ledger.ts";
import { LEDGER_LABEL, SLOT_LABEL } from "../objects/wave.ts";
import { CAPACITY_TYPE_LABEL } from "../objects/karpenter.ts";

export interface PodView {
  /** Pods of the ledger (terminating ones included: their slots are freed by reconcile). */
  pods: Pod[];
  /** Tokens whose pod the watch saw and then saw deleted. */
  gone: (token: string) => boolean;
}

export interface PodCacheOptions {
  kube: KubeClient;
  clock: Clock;
  logger?: Logger;
  /** How long a deleted pod's token is remembered as gone. Default 10 min. */
  goneTtlMs?: number;
}

/** Keeps only what counting, verification and repair read. */
/** The trimmed stand-in for a pod's required capacity-type In [spot] term. */
const REQUIRES_SPOT: NonNullable<Pod["spec"]["affinity"]> = {
  nodeAffinity: {
    requiredDuringSchedulingIgnoredDuringExecution: {
      nodeSelectorTerms: [
        { matchExpressions: [{ key: CAPACITY_TYPE_LABEL, operator: "In", values: ["spot"] }] },
      ],
    },
  },
};

export function trimPod(p: Pod): Pod {
  const m = p.metadata;
  const pod: Pod = {
    metadata: {
      name: m.name,
      namespace: m.namespace,
      uid: m.uid,
      // The informer tells an update from a resync by it: without it no update is ever seen.
      resourceVersion: m.resourceVersion,
      labels: m.labels,
      creationTimestamp: m.creationTimestamp,
      ...(m.deletionTimestamp !== undefined ? { deletionTimestamp: m.deletionTimestamp } : {}),
      ...(m.ownerReferences !== undefined ? { ownerReferences: m.ownerReferences } : {}),
    },
    spec: {
      containers: [],
      ...(p.spec.nodeName !== undefined ? { nodeName: p.spec.nodeName } : {}),
      // Only whether it must run on spot (repair replaces such pods during Prefer's fallback).
      ...(requiresSpot(p) ? { affinity: REQUIRES_SPOT } : {}),
    },
  };
  if (p.status) pod.status = { phase: p.status.phase, conditions: p.status.conditions };
  return pod;
}

export class PodCache {
  readonly #informer: Informer<"Pod">;
  readonly #byLedger = new Map<string, Map<string, Pod>>();
  readonly #gone = new Map<string, number>();
  readonly #clock: Clock;
  readonly #goneTtlMs: number;
  readonly #listeners = new Set<(ledger: string) => void>();

  constructor(opts: PodCacheOptions) {
    this.#clock = opts.clock;
    this.#goneTtlMs = opts.goneTtlMs ?? 600_000;
    this.#informer = new Informer({
      client: opts.kube,
      kind: "Pod",
      labelSelector: LEDGER_LABEL,
      clock: opts.clock,
      log: (opts.logger ?? silentLogger).child({ component: "spot-pod-cache" }),
      transform: trimPod,
    });
    this.#informer.on("add", (p) => this.#put(p));
    this.#informer.on("update", (p) => this.#put(p));
    this.#informer.on("delete", (p) => this.#remove(p));
  }

  start(signal?: AbortSignal): this {
    this.#informer.start(signal);
    return this;
  }

  stop(): Promise<void> {
    return this.#informer.stop();
  }

  get synced(): Promise<void> {
    return this.#informer.synced;
  }

  /** Whether the cache may be used instead of a consistent list: listed once and watching now. */
  get ready(): boolean {
    return this.#informer.hasSynced && this.#informer.phase === "watching";
  }

  /** Called with a ledger id whenever one of its pods changes (repair wakes up on it). */
  onChange(fn: (ledger: string) => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  view(ledger: string): PodView {
    return { pods: [...(this.#byLedger.get(ledger)?.values() ?? [])], gone: (t) => this.#gone.has(t) };
  }

  /** Ledger ids with at least one pod. */
  ledgers(): string[] {
    return [...this.#byLedger.keys()];
  }

  /** Live pods of the ledger whose controller is `ownerUid`. */
  liveOwned(ledger: string, ownerUid: string): number {
    let n = 0;
    for (const p of this.#byLedger.get(ledger)?.values() ?? [])
      if (isLivePod(p) && (p.metadata.ownerReferences ?? []).some((o) => o.controller && o.uid === ownerUid))
        n++;
    return n;
  }

  #put(p: Pod): void {
    const ledger = p.metadata.labels?.[LEDGER_LABEL];
    if (ledger === undefined) return;
    let pods = this.#byLedger.get(ledger);
    if (!pods) this.#byLedger.set(ledger, (pods = new Map<string, Pod>()));
    pods.set(`${p.metadata.namespace ?? ""}/${p.metadata.name ?? ""}`, p);
    this.#emit(ledger);
  }

  #remove(p: Pod): void {
    const ledger = p.metadata.labels?.[LEDGER_LABEL];
    if (ledger === undefined) return;
    const pods = this.#byLedger.get(ledger);
    pods?.delete(`${p.metadata.namespace ?? ""}/${p.metadata.name ?? ""}`);
    if (pods?.size === 0) this.#byLedger.delete(ledger);
    const token = p.metadata.labels?.[SLOT_LABEL];
    if (token !== undefined) {
      const now = this.#clock.now();
      this.#gone.set(token, now);
      if (this.#gone.size > 50_000 || this.#gone.size % 1000 === 0)
        for (const [t, at] of this.#gone) if (at + this.#goneTtlMs < now) this.#gone.delete(t);
    }
    this.#emit(ledger);
  }

  #emit(ledger: string): void {
    for (const fn of this.#listeners) fn(ledger);
  }
}
