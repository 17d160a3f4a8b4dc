// The slot allocator: the I/O shell around the pure ledger. Each workload's ledger is a Lease in
// Wave's namespace (state in an annotation), updated with optimistic concurrency
// (resourceVersion compare-and-swap). Concurrent admissions for the same workload on this replica
// are batched into one read-modify-write, so contention grows with replicas, not with pods.
import { randomUUID } from "node:crypto";
import type { Lease, Pod } from "../objects/kube.ts";
import { isConflict, isNotFound, type KubeClient } from "../kube/port.ts";
import type { Clock } from "../shared/clock.ts";
import { silentLogger, type Logger } from "../shared/log.ts";
import { LEDGER_LABEL, SPOT, type Capacity } from "./constants.ts";
import {
  cloneLedger,
  DEFAULT_TIMING,
  emptyLedger,
  ledgerId,
  LedgerFormatError,
  parseLedger,
  reconcile,
  reserve,
  serializeLedger,
  wouldAssignSpot,
  type Ledger,
  type LedgerTiming,
} from "./ledger.ts";
import { workloadKey, type SpotPolicy, type WorkloadRef } from "./policy.ts";

export const LEDGER_STATE_ANNOTATION = "wave.sh/spot-ledger-state";
export const LEDGER_WORKLOAD_ANNOTATION = "wave.sh/workload";
export const MANAGED_BY_LABEL = "app.kubernetes.io/managed-by";

export interface AllocationRequest {
  workload: WorkloadRef;
  policy: SpotPolicy;
  /** Dry-run admissions get an answer computed from the ledger without writing it. */
  dryRun: boolean;
  /** Aborted requests still queued are dropped before their batch is written. */
  signal?: AbortSignal;
}

export interface AllocationResult {
  capacity: Capacity;
  slot: string;
  ledger: string;
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
  /** Slot token source (tests inject a deterministic one). */
  token?: () => string;
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
  readonly #token: () => string;
  readonly #queues = new Map<string, Queue>();
  readonly #ledgerCacheMs: number;
  readonly #cache = new Map<string, { lease: Lease | undefined; ledger: Ledger; at: number }>();
  /** Writes and conflicts so far (observability and tests). */
  readonly stats = { batches: 0, writes: 0, conflicts: 0, reconciles: 0 };

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
    this.#token = opts.token ?? randomToken;
    this.#ledgerCacheMs = opts.ledgerCacheMs ?? 500;
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
            if (r) p.resolve(r);
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

  async #flush(batch: Pending[]): Promise<AllocationResult[]> {
    this.stats.batches++;
    const last = batch[batch.length - 1];
    if (!last) return [];
    const { workload, policy } = last.req;
    const id = ledgerId(workload);
    const name = ledgerLeaseName(id);
    const real = batch.filter((p) => !p.req.dryRun);
    const tokens = batch.map(() => this.#token());
    let listed: { pods: Pod[]; startedAt: number; endedAt: number } | undefined;

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
      const sinceReconcile = now - ledger.reconciledAt;
      const mustReconcile =
        real.length > 0 &&
        (sinceReconcile >= this.#reconcileIntervalMs ||
          (sinceReconcile >= this.#refillCheckMs &&
            wouldAssignSpot(ledger, policy, real.length) &&
            hasOnDemand(ledger)));
      if (mustReconcile) {
        if (!listed || listed.startedAt <= ledger.reconciledAt) {
          const startedAt = this.#clock.now();
          const pods = await this.#listPods(workload, id);
          listed = { pods, startedAt, endedAt: this.#clock.now() };
          this.stats.reconciles++;
        }
        next = reconcile(ledger, policy, listed.pods, listed.startedAt, listed.endedAt, this.#timing);
      } else next = cloneLedger(ledger);

      // Real admissions in arrival order first; dry-run ones are answered as if they came after.
      const realTokens: string[] = [];
      const dryTokens: string[] = [];
      batch.forEach((p, i) => (p.req.dryRun ? dryTokens : realTokens).push(tokens[i] ?? ""));
      const realCaps = reserve(next, policy, realTokens, now, this.#maxEntries);
      const dryCaps = reserve(cloneLedger(next), policy, dryTokens, now);
      let r = 0;
      let d = 0;
      const results = batch.map((p, i): AllocationResult => ({
        capacity: (p.req.dryRun ? dryCaps[d++] : realCaps[r++]) ?? SPOT,
        slot: tokens[i] ?? "",
        ledger: id,
      }));
      // Nothing to record (dry-run only, or only untracked spot pods and no reconcile change): the
      // answer stands on the consistent read alone, and skipping the write keeps contention low.
      if (real.length === 0 || !changed(ledger, next)) return results;

      try {
        const written = await this.#write(name, workload, lease, next);
        this.#remember(name, written, next, this.#clock.now());
        this.stats.writes++;
        return results;
      } catch (err) {
        if (isConflict(err)) {
          // 409: someone wrote since our read (or created the ledger first): re-read and redo.
          this.stats.conflicts++;
          continue;
        }
        throw err;
      }
    }
    throw new Error(`spot ledger ${name}: gave up after ${this.#maxAttempts} conflicting writes`);
  }

  #remember(name: string, lease: Lease | undefined, ledger: Ledger, at: number): void {
    if (this.#ledgerCacheMs <= 0) return;
    if (this.#cache.size >= 10_000) this.#cache.clear();
    this.#cache.set(name, { lease, ledger, at });
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
          labels: { [MANAGED_BY_LABEL]: "wave", [LEDGER_LABEL]: ledgerId(ref) },
          annotations,
        },
        spec: { holderIdentity: this.#replicaId },
      },
      { namespace: this.#namespace },
    );
  }
}

function changed(before: Ledger, after: Ledger): boolean {
  if (before.reconciledAt !== after.reconciledAt || before.entries.size !== after.entries.size) return true;
  for (const [token, e] of after.entries) {
    const b = before.entries.get(token);
    if (!b || b.capacity !== e.capacity || b.reservedAt !== e.reservedAt || b.confirmedAt !== e.confirmedAt)
      return true;
  }
  return false;
}

function hasOnDemand(l: Ledger): boolean {
  for (const e of l.entries.values()) if (e.capacity !== SPOT) return true;
  return false;
}
