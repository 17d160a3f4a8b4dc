// The slot allocator: the I/O shell around the pure ledger. Each workload's ledger is a Lease in
// Wave's namespace (state in an annotation), updated with optimistic concurrency
// (resourceVersion compare-and-swap). Concurrent admissions for the same workload on this replica
// are batched into one read-modify-write, so contention grows with replicas, not with pods.
import { randomUUID } from "node:crypto";
import type { Lease, Pod } from "../objects/kube.ts";
import { LEDGER_LABEL, MANAGED_BY_LABEL, MANAGED_BY_VALUE, SLOT_LABEL } from "../objects/wave.ts";
import { isConflict, isNotFound, type KubeClient } from "../kube/port.ts";
import type { Clock } from "../shared/clock.ts";
import { silentLogger, type Logger } from "../shared/log.ts";
import type { BackingVerifier, OwnerRef } from "./backing.ts";
import { ON_DEMAND, SPOT, type Capacity } from "./constants.ts";
import {
  cloneLedger,
  isLivePod,
  DEFAULT_TIMING,
  emptyLedger,
  ledgerId,
  LedgerFormatError,
  countsFor,
  parseLedger,
  reconcile,
  reserve,
  sameRevision,
  serializeLedger,
  wouldAssignSpot,
  type Ledger,
  type LedgerEntry,
  type LedgerTiming,
  type SlotRequest,
} from "./ledger.ts";
import type { PodCache } from "./pod-cache.ts";
import { tracksTotal, workloadKey, type SpotPolicy, type WorkloadRef } from "../policy/spot.ts";

export const LEDGER_STATE_ANNOTATION = "wave.sh/spot-ledger-state";
export const LEDGER_WORKLOAD_ANNOTATION = "wave.sh/workload";

export interface AllocationRequest {
  workload: WorkloadRef;
  policy: SpotPolicy;
  /** Dry-run admissions get an answer computed from the ledger without writing it. */
  dryRun: boolean;
  /** Aborted requests still queued are dropped before their batch is written. */
  signal?: AbortSignal;
  /** The pod's template revision (rollouts: each revision gets its own on-demand target). */
  revision?: string;
  /** The pod's controller, to check that a real pod is about to be created (issue 16). */
  owner?: OwnerRef;
  /** Remote address the review came from (per-source verification limits). */
  source?: string;
}

export interface AllocationResult {
  capacity: Capacity;
  slot: string;
  ledger: string;
  /** Prefer only: spot is in its fallback window (ADR 0007): a spot preference, not a requirement. */
  softSpot?: boolean;
  /** false: no pod is about to be created for this review; it got spot and holds no slot. */
  backed?: boolean;
}

export interface Allocator {
  allocate(req: AllocationRequest): Promise<AllocationResult>;
}

export interface SlotAllocatorOptions {
  kube: KubeClient;
  /** Wave's namespace: ledgers live here. */
  namespace: string;
  clock: Clock;
  logger?: Logger;
  /** Written as the Lease holderIdentity (which replica wrote last), for debugging. */
  replicaId?: string;
  timing?: Partial<LedgerTiming>;
  /** Reconcile with live pods at least this often while admissions arrive. Default 30 s. */
  reconcileIntervalMs?: number;
  /**
   * When a batch would put a pod on spot while on-demand slots are held, reconcile first (so a dead
   * on-demand pod's slot is refilled before any spot pod) — at most this often. Default 1 s.
   */
  refillCheckMs?: number;
  /** Compare-and-swap attempts per batch before giving up. Default 20. */
  maxAttempts?: number;
  /** Slots per ledger (keeps the Lease annotation well under the 256 KiB limit). Default 5000. */
  maxEntries?: number;
  /**
   * Reuse this replica's last read or write of a ledger for this long before reading it again.
   * Writes are compare-and-swap, so a stale copy only costs a retry; a spot answer given from it
   * can miss a slot another replica freed within this window (a refill is delayed, never an
   * extra on-demand pod). Default 500 ms; 0 reads on every batch.
   */
  ledgerCacheMs?: number;
  /**
   * Reservations in flight (not yet confirmed by a live pod) per revision; a review beyond it is
   * unbacked (spot, recorded nowhere). Default 500, the most pods the ReplicaSet controller creates
   * in one sync (its burstReplicas). Bounds what forged reviews can hold even when an owner's room
   * cannot be read, so they can never fill a ledger (issue 32).
   */
  maxInFlightPerRevision?: number;
  /** Slot token source (tests inject a deterministic one). */
  token?: () => string;
  /**
   * The pod watch: when it is listing-and-watching, every batch is reconciled against it (no API
   * call), so a deleted pod's slot is free for the very next admission.
   */
  pods?: PodCache;
  /** Checks that an on-demand slot goes to a pod about to be created (forged reviews). */
  backing?: BackingVerifier;
}

interface Pending {
  req: AllocationRequest;
  resolve: (r: AllocationResult) => void;
  reject: (e: unknown) => void;
}

interface Queue {
  pending: Pending[];
  running: boolean;
}

// 20 hex chars (80 random bits) from randomUUID, which draws from a cached entropy pool.
const randomToken = (): string => randomUUID().replaceAll("-", "").slice(12, 32);

export const DEFAULT_MAX_IN_FLIGHT_PER_REVISION = 500;

export function ledgerLeaseName(id: string): string {
  return `wave-spot-${id}`;
}

export class SlotAllocator implements Allocator {
  readonly #kube: KubeClient;
  readonly #namespace: string;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #replicaId: string;
  readonly #timing: LedgerTiming;
  readonly #reconcileIntervalMs: number;
  readonly #refillCheckMs: number;
  readonly #maxAttempts: number;
  readonly #maxEntries: number;
  readonly #maxInFlightPerRevision: number;
  readonly #token: () => string;
  readonly #queues = new Map<string, Queue>();
  readonly #ledgerCacheMs: number;
  readonly #pods: PodCache | undefined;
  readonly #backing: BackingVerifier | undefined;
  readonly #cache = new Map<string, { lease: Lease | undefined; ledger: Ledger; at: number }>();
  /** Writes and conflicts so far (observability and tests). */
  readonly stats = { batches: 0, writes: 0, conflicts: 0, reconciles: 0, unbacked: 0 };

  constructor(opts: SlotAllocatorOptions) {
    this.#kube = opts.kube;
    this.#namespace = opts.namespace;
    this.#clock = opts.clock;
    this.#log = opts.logger ?? silentLogger;
    this.#replicaId = opts.replicaId ?? `wave-webhook-${randomToken().slice(0, 8)}`;
    this.#timing = { ...DEFAULT_TIMING, ...opts.timing };
    this.#reconcileIntervalMs = opts.reconcileIntervalMs ?? 30_000;
    this.#refillCheckMs = opts.refillCheckMs ?? 1_000;
    this.#maxAttempts = opts.maxAttempts ?? 20;
    this.#maxEntries = opts.maxEntries ?? 5000;
    this.#maxInFlightPerRevision = opts.maxInFlightPerRevision ?? DEFAULT_MAX_IN_FLIGHT_PER_REVISION;
    this.#token = opts.token ?? randomToken;
    this.#ledgerCacheMs = opts.ledgerCacheMs ?? 500;
    this.#pods = opts.pods;
    this.#backing = opts.backing;
  }

  get namespace(): string {
    return this.#namespace;
  }

  allocate(req: AllocationRequest): Promise<AllocationResult> {
    if (req.signal?.aborted) return Promise.reject(req.signal.reason as Error);
    const key = workloadKey(req.workload);
    let queue = this.#queues.get(key);
    if (!queue) {
      queue = { pending: [], running: false };
      this.#queues.set(key, queue);
    }
    const q = queue;
    return new Promise<AllocationResult>((resolve, reject) => {
      q.pending.push({ req, resolve, reject });
      if (!q.running) {
        q.running = true;
        // Admissions arriving in the same tick join the first batch.
        queueMicrotask(() => void this.#drain(key, q));
      }
    });
  }

  async #drain(key: string, q: Queue): Promise<void> {
    try {
      while (q.pending.length > 0) {
        const batch = q.pending.splice(0).filter((p) => {
          if (!p.req.signal?.aborted) return true;
          p.reject(p.req.signal.reason);
          return false;
        });
        if (batch.length === 0) continue;
        try {
          const results = await this.#flush(batch);
          batch.forEach((p, i) => {
            const r = results[i];
            if (r instanceof Error) p.reject(r);
            else if (r) p.resolve(r);
            else p.reject(new Error("internal: no allocation result"));
          });
        } catch (err) {
          for (const p of batch) p.reject(err);
        }
      }
    } finally {
      q.running = false;
      if (q.pending.length === 0) this.#queues.delete(key);
      else {
        q.running = true;
        queueMicrotask(() => void this.#drain(key, q));
      }
    }
  }

  async #read(name: string, ref: WorkloadRef): Promise<{ lease: Lease | undefined; ledger: Ledger }> {
    let lease: Lease;
    try {
      lease = await this.#kube.get("Lease", name, this.#namespace);
    } catch (err) {
      if (isNotFound(err)) return { lease: undefined, ledger: emptyLedger(ref) };
      throw err;
    }
    const text = lease.metadata.annotations?.[LEDGER_STATE_ANNOTATION];
    const key = workloadKey(ref);
    if (text === undefined) return { lease, ledger: emptyLedger(ref) };
    try {
      const ledger = parseLedger(text);
      if (ledger.workload !== key)
        throw new LedgerFormatError(`ledger ${name} belongs to ${ledger.workload}, not ${key}`);
      return { lease, ledger };
    } catch (err) {
      // Pods are the truth: an unreadable ledger is rebuilt from them (reconciledAt 0 forces it).
      this.#log.warn("spot ledger unreadable; rebuilding from pods", { ledger: name, err });
      return { lease, ledger: emptyLedger(ref) };
    }
  }

  async #listPods(ref: WorkloadRef, id: string): Promise<Pod[]> {
    const pods: Pod[] = [];
    let cont: string | undefined;
    do {
      const page = await this.#kube.list("Pod", {
        namespace: ref.namespace,
        labelSelector: `${LEDGER_LABEL}=${id}`,
        limit: 500,
        ...(cont ? { continue: cont } : {}),
      });
      pods.push(...page.items);
      cont = page.continue;
    } while (cont);
    return pods;
  }

  /** One result per request: its allocation, or why it alone has none (a full ledger). */
  async #flush(batch: Pending[]): Promise<(AllocationResult | Error)[]> {
    this.stats.batches++;
    const last = batch[batch.length - 1];
    if (!last) return [];
    const { workload, policy } = last.req;
    const id = ledgerId(workload);
    const name = ledgerLeaseName(id);
    const real = batch.filter((p) => !p.req.dryRun);
    const tokens = batch.map(() => this.#token());
    let listed: { pods: Pod[]; startedAt: number; endedAt: number } | undefined;
    /** Owner uid → room for new pods (verified once per batch, reused across CAS retries). */
    const rooms = new Map<string, number | undefined>();
    /** Source → within its verification budget (charged once per batch, like `rooms`). */
    const sources = new Map<string, boolean>();

    for (let attempt = 1; attempt <= this.#maxAttempts; attempt++) {
      const cached = this.#cache.get(name);
      const fresh =
        attempt === 1 && cached && this.#clock.now() - cached.at < this.#ledgerCacheMs
          ? cached
          : await this.#read(name, workload);
      const { lease, ledger } = fresh;
      const now = this.#clock.now();
      if (fresh !== cached) this.#remember(name, lease, ledger, now);
      let next: Ledger;
      const watch = this.#pods?.ready ? this.#pods.view(id) : undefined;
      if (real.length > 0 && watch) {
        // The watch is current to within its event latency: allow `skew` for it (ADR 0002).
        next = reconcile(
          ledger,
          policy,
          watch.pods,
          now - this.#timing.skewMs,
          now,
          this.#timing,
          watch.gone,
        );
      } else {
        const sinceReconcile = now - ledger.reconciledAt;
        const mustReconcile =
          real.length > 0 &&
          (sinceReconcile >= this.#reconcileIntervalMs ||
            (sinceReconcile >= this.#refillCheckMs &&
              wouldAssignSpot(ledger, policy, real.length) &&
              hasOnDemand(ledger)));
        if (mustReconcile) {
          if (!listed || listed.startedAt <= ledger.reconciledAt) listed = await this.#list(workload, id);
          next = reconcile(ledger, policy, listed.pods, listed.startedAt, listed.endedAt, this.#timing);
        } else next = cloneLedger(ledger);
      }

      // Real admissions in arrival order first; dry-run ones are answered as if they came after.
      const realReqs: SlotRequest[] = [];
      const dryReqs: SlotRequest[] = [];
      batch.forEach((p, i) =>
        (p.req.dryRun ? dryReqs : realReqs).push({
          token: tokens[i] ?? "",
          revision: p.req.revision ?? "",
          ...(p.req.source === undefined ? {} : { source: p.req.source }),
        }),
      );
      await this.#checkBacking(batch, realReqs, next, policy, id, rooms, sources);
      const realCaps = reserve(next, policy, realReqs, now, this.#maxEntries);
      const dryCaps = reserve(cloneLedger(next), policy, dryReqs, now);
      const softSpot = policy.strategy === "Prefer" && next.fallbackUntil > now;
      let r = 0;
      let d = 0;
      const results = batch.map((p, i): AllocationResult | Error => {
        const backed = p.req.dryRun ? true : realReqs[r]?.backed !== false;
        // A full ledger fails only the requests that needed a slot recorded, not the batch.
        if (!p.req.dryRun && realReqs[r]?.full === true) {
          r++;
          return new LedgerFormatError(`ledger full (${this.#maxEntries} slots)`);
        }
        return {
          capacity: (p.req.dryRun ? dryCaps[d++] : realCaps[r++]) ?? SPOT,
          slot: tokens[i] ?? "",
          ledger: id,
          softSpot,
          backed,
        };
      });
      // Nothing to record (dry-run only, or only untracked spot pods and no reconcile change): the
      // answer stands on the consistent read alone, and skipping the write keeps contention low.
      // With the watch every batch reconciles; only a material change (a slot taken, freed or
      // first confirmed) is worth a write — re-confirming live pods is not.
      if (real.length === 0 || !(watch ? changedMaterially(ledger, next) : changed(ledger, next)))
        return results;

      if (await this.#casWrite(name, workload, lease, next)) return results;
      // 409: someone wrote since our read (or created the ledger first): re-read and redo.
    }
    throw new Error(`spot ledger ${name}: gave up after ${this.#maxAttempts} conflicting writes`);
  }

  /**
   * Reads a workload's ledger, reconciles it with the pod watch (or a consistent list), applies
   * `change` and writes it back when anything changed (compare-and-swap, retried). The repair
   * controller's way to free dead slots eagerly and to open Prefer's fallback window.
   */
  async update(
    workload: WorkloadRef,
    policy: SpotPolicy,
    change: (l: Ledger) => void = () => undefined,
  ): Promise<Ledger> {
    const id = ledgerId(workload);
    const name = ledgerLeaseName(id);
    for (let attempt = 1; attempt <= this.#maxAttempts; attempt++) {
      const { lease, ledger } = await this.#read(name, workload);
      const now = this.#clock.now();
      const watch = this.#pods?.ready ? this.#pods.view(id) : undefined;
      const listed = watch ? undefined : await this.#list(workload, id);
      const next = watch
        ? reconcile(ledger, policy, watch.pods, now - this.#timing.skewMs, now, this.#timing, watch.gone)
        : reconcile(
            ledger,
            policy,
            listed?.pods ?? [],
            listed?.startedAt ?? now,
            listed?.endedAt ?? now,
            this.#timing,
          );
      change(next);
      if (!changedMaterially(ledger, next)) return next;
      if (lease === undefined && next.entries.size === 0 && next.fallbackUntil === 0) return next;
      if (await this.#casWrite(name, workload, lease, next)) return next;
    }
    throw new Error(`spot ledger ${name}: gave up after ${this.#maxAttempts} conflicting writes`);
  }

  async #list(ref: WorkloadRef, id: string): Promise<{ pods: Pod[]; startedAt: number; endedAt: number }> {
    const startedAt = this.#clock.now();
    const pods = await this.#listPods(ref, id);
    this.stats.reconciles++;
    return { pods, startedAt, endedAt: this.#clock.now() };
  }

  /**
   * Marks the real requests that would record a slot (an on-demand one, or a spot one the
   * policy's percentage counts) but have no pod about to be created behind them (`backed: false`,
   * answered spot, recorded nowhere; issues 16 and 32). A review is backed only when its pod names
   * its controller with a uid (a controller ownerReference without one cannot be verified: the
   * ReplicaSet and StatefulSet controllers always set it), its source is within its budget, the
   * owner has room — spec.replicas − its live pods − the reservations in flight *of its own
   * revision* — and that revision holds fewer than `maxInFlightPerRevision` reservations in flight.
   * Live pods come from the watch; when it says "no room" (it may not have seen a deletion yet) a
   * consistent list decides.
   */
  async #checkBacking(
    batch: Pending[],
    realReqs: SlotRequest[],
    ledger: Ledger,
    policy: SpotPolicy,
    id: string,
    rooms: Map<string, number | undefined>,
    sources: Map<string, boolean>,
  ): Promise<void> {
    const backing = this.#backing;
    if (!backing || realReqs.length === 0) return;
    const workload = batch[batch.length - 1]?.req.workload;
    const total = tracksTotal(policy);
    // Probe in order, one request at a time: a slot refused to an unbacked review goes back to the
    // probe, so the next review that would get it is verified too (reserve() gives it on-demand).
    const probe = cloneLedger(ledger);
    const real = batch.filter((p) => !p.req.dryRun);
    const left = new Map<string, number>();
    /** Revision (as the room counts it) → reservations in flight, this batch's backed ones included. */
    const inFlight = new Map<string, number>();
    for (let i = 0; i < real.length; i++) {
      const req = real[i]?.req;
      const slot = realReqs[i];
      if (!req || !slot) continue;
      const capacity = reserve(probe, policy, [slot], 0)[0];
      if (capacity !== ON_DEMAND && !total) continue; // an untracked spot pod records nothing
      const owner = req.owner;
      const revision = roomRevision(workload, slot.revision ?? "");
      let flying = inFlight.get(revision);
      if (flying === undefined) inFlight.set(revision, (flying = countInFlight(ledger, revision)));
      // Each source is limited on its own budget: one over its limit gets no slot, and cannot
      // spend the owner's room for the other reviews of the batch (the apiserver's). A review
      // without an owner uid is charged like any other, then refused.
      const source = req.source ?? "";
      let admitted = sources.get(source);
      if (admitted === undefined) sources.set(source, (admitted = backing.admits(source)));
      // Per source too: another address's reservations in flight never take this one's room.
      const key = owner ? `${owner.uid}/${revision}/${source}` : "";
      let room = owner && admitted ? left.get(key) : 0;
      if (room === undefined && owner) {
        if (!rooms.has(key)) rooms.set(key, await this.#room(owner, id, ledger, revision, req.source));
        room = rooms.get(key) ?? Infinity;
      }
      // The cap holds even when the apiserver cannot tell the owner's room (room undefined → ∞).
      if (flying >= this.#maxInFlightPerRevision) room = 0;
      if (owner && room !== undefined && room > 0) {
        left.set(key, room - 1);
        inFlight.set(revision, flying + 1);
      } else {
        if (owner && admitted && room !== undefined) left.set(key, room);
        slot.backed = false;
        probe.entries.delete(slot.token);
        this.stats.unbacked++;
        this.#log.warn("spot review without a pod about to be created: no slot recorded", {
          owner: owner ? `${owner.namespace}/${owner.kind}/${owner.name}` : "none with a uid",
          revision: slot.revision,
          source: req.source,
        });
      }
    }
  }

  /**
   * spec.replicas − the owner's live pods − reservations of its revision (`revision`, "" = all)
   * from `source` (or of no known source) whose pods are not among the pods yet.
   */
  async #room(
    owner: OwnerRef,
    id: string,
    ledger: Ledger,
    revision: string,
    source: string | undefined,
  ): Promise<number | undefined> {
    const desired = await this.#backing?.read(owner);
    if (desired === undefined || desired === 0) return desired;
    const owned = (pods: readonly Pod[]): number => {
      const seen = new Set(pods.map((p) => p.metadata.labels?.[SLOT_LABEL] ?? ""));
      let inFlight = 0;
      for (const [token, e] of ledger.entries)
        if (
          e.confirmedAt === 0 &&
          !seen.has(token) &&
          sameRevision(e.revision, revision) &&
          countsFor(e, source)
        )
          inFlight++;
      const live = pods.filter(
        (p) =>
          isLivePod(p) && (p.metadata.ownerReferences ?? []).some((o) => o.controller && o.uid === owner.uid),
      ).length;
      return live + inFlight;
    };
    if (this.#pods?.ready) {
      const room = desired - owned(this.#pods.view(id).pods);
      if (room > 0) return room;
    }
    // The watch may lag a deletion (the replacement's review can outrun its event): ask the apiserver.
    const ref: WorkloadRef = { namespace: owner.namespace, kind: owner.kind, name: owner.name };
    try {
      return desired - owned((await this.#list(ref, id)).pods);
    } catch {
      return undefined;
    }
  }

  #remember(name: string, lease: Lease | undefined, ledger: Ledger, at: number): void {
    if (this.#ledgerCacheMs <= 0) return;
    if (this.#cache.size >= 10_000) this.#cache.clear();
    this.#cache.set(name, { lease, ledger, at });
  }

  /**
   * Writes `next` over the ledger as read in `lease` (compare-and-swap): false on a conflict,
   * counted, for the caller to re-read and redo.
   */
  async #casWrite(name: string, ref: WorkloadRef, lease: Lease | undefined, next: Ledger): Promise<boolean> {
    try {
      const written = await this.#write(name, ref, lease, next);
      this.#remember(name, written, next, this.#clock.now());
      this.stats.writes++;
      return true;
    } catch (err) {
      if (!isConflict(err)) throw err;
      this.stats.conflicts++;
      return false;
    }
  }

  async #write(name: string, ref: WorkloadRef, lease: Lease | undefined, ledger: Ledger): Promise<Lease> {
    const annotations = {
      ...lease?.metadata.annotations,
      [LEDGER_WORKLOAD_ANNOTATION]: workloadKey(ref),
      [LEDGER_STATE_ANNOTATION]: serializeLedger(ledger),
    };
    if (lease) {
      return this.#kube.replace(
        "Lease",
        {
          ...lease,
          metadata: { ...lease.metadata, annotations },
          spec: { ...lease.spec, holderIdentity: this.#replicaId },
        },
        { namespace: this.#namespace },
      );
    }
    return this.#kube.create(
      "Lease",
      {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: {
          name,
          namespace: this.#namespace,
          labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE, [LEDGER_LABEL]: ledgerId(ref) },
          annotations,
        },
        spec: { holderIdentity: this.#replicaId },
      },
      { namespace: this.#namespace },
    );
  }
}

/** Whether the entry count, the fallback window or an entry (as `same` compares them) differs. */
function entriesDiffer(
  before: Ledger,
  after: Ledger,
  same: (b: LedgerEntry, e: LedgerEntry) => boolean,
): boolean {
  if (before.entries.size !== after.entries.size || before.fallbackUntil !== after.fallbackUntil) return true;
  for (const [token, e] of after.entries) {
    const b = before.entries.get(token);
    if (!b || !same(b, e)) return true;
  }
  return false;
}

function changed(before: Ledger, after: Ledger): boolean {
  return (
    before.reconciledAt !== after.reconciledAt ||
    entriesDiffer(
      before,
      after,
      (b, e) =>
        b.capacity === e.capacity &&
        b.reservedAt === e.reservedAt &&
        b.confirmedAt === e.confirmedAt &&
        b.revision === e.revision,
    )
  );
}

function changedMaterially(before: Ledger, after: Ledger): boolean {
  return entriesDiffer(
    before,
    after,
    (b, e) =>
      b.capacity === e.capacity &&
      b.revision === e.revision &&
      (b.confirmedAt === 0) === (e.confirmedAt === 0),
  );
}

/**
 * The revision whose reservations an owner's room counts: a Deployment's ReplicaSet is one
 * revision (its name ends with the pod-template-hash), so another revision's reservations — a
 * rollout's other ReplicaSet, or a forged review's made-up hash — never take its room. A
 * StatefulSet or bare ReplicaSet is the workload's only owner: every reservation counts ("").
 */
function roomRevision(workload: WorkloadRef | undefined, revision: string): string {
  return workload?.kind === "Deployment" ? revision : "";
}

/** Reservations not yet confirmed by a live pod, of `revision` ("" = all). */
function countInFlight(l: Ledger, revision: string): number {
  let n = 0;
  for (const e of l.entries.values()) if (e.confirmedAt === 0 && sameRevision(e.revision, revision)) n++;
  return n;
}

function hasOnDemand(l: Ledger): boolean {
  for (const e of l.entries.values()) if (e.capacity !== SPOT) return true;
  return false;
}
