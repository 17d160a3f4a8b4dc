// The per-workload slot ledger, as pure functions. One ledger per workload records every slot
// Wave handed out that still counts: on-demand slots always, spot slots too when the policy's
// percentage needs the workload's total. Entries are reserved at admission (before the pod exists)
// and reconciled against the live pods that carry the slot token. See docs/adr/0002.
import { createHash } from "node:crypto";
import type { Pod } from "../objects/kube.ts";
import { ON_DEMAND, SPOT, revisionOf, type Capacity } from "./constants.ts";
import { onDemandTarget } from "../policy/on-demand-target.ts";
import { tracksTotal, workloadKey, type SpotPolicy, type WorkloadRef } from "../policy/spot.ts";
import { ASSIGNMENT_LABEL, SLOT_LABEL } from "../objects/wave.ts";

export interface LedgerEntry {
  capacity: Capacity;
  /** When the slot was reserved (admission time, ms). */
  reservedAt: number;
  /** End time of the latest pod list that saw the pod; 0 while the pod has not been seen. */
  confirmedAt: number;
  /**
   * The pod's revision as `revisionOf` counts it (a Deployment pod's `pod-template-hash`); "" when
   * unknown or for a StatefulSet's pods (counts for every revision). Each revision gets its own
   * on-demand target, so a rollout's new pods take their N on-demand slots while the old revision
   * still holds its own (ADR 0002, "Revisions").
   */
  revision: string;
  /**
   * The address the reservation's review came from (issue 42): while unconfirmed, it counts only
   * for reviews from that address, so a forger's reservation never takes the slot of the
   * apiserver's next review (nor the forger's of another). Confirmed, or "" (written by an older
   * version, or adopted), it counts for every review.
   */
  source?: string;
}

export interface Ledger {
  /** workloadKey of the workload this ledger counts (guards against id collisions). */
  workload: string;
  /** Start time of the pod list the ledger was last reconciled with (0 = never). */
  reconciledAt: number;
  entries: Map<string, LedgerEntry>;
  /**
   * Prefer only: until this time (ms) spot pods get a spot *preference* instead of the required
   * spot term, because spot capacity was seen unavailable (ADR 0007). 0 = not in fallback.
   */
  fallbackUntil: number;
}

/** One slot asked for: its token, the pod's revision, and whether it may take on-demand. */
export interface SlotRequest {
  token: string;
  revision?: string;
  /**
   * false: no real pod is about to be created for this review (its owner has no room for a new
   * pod), so it may not take an on-demand slot — a forged or stale review (issue 16).
   */
  backed?: boolean;
  /** The review's address (see LedgerEntry.source). */
  source?: string;
  /**
   * Set by reserve(): the slot would have to be recorded but the ledger holds `maxEntries` — this
   * request alone gets no slot (the allocator answers it with the fallback); the others of the
   * batch are answered as usual.
   */
  full?: boolean;
}

export interface LedgerTiming {
  /** An unconfirmed reservation older than this whose pod is absent is dropped (creation failed). */
  reservationTtlMs: number;
  /** Tolerated clock skew between replicas. */
  skewMs: number;
}

/**
 * A real pod shows up in the webhook's pod watch within a second or two of its admission, so an
 * unconfirmed reservation is released after 15 s (it used to be 60 s, which let a dead or forged
 * reservation hold a slot for a minute).
 */
export const DEFAULT_TIMING: LedgerTiming = { reservationTtlMs: 15_000, skewMs: 5_000 };

/** Stable id of a workload's ledger: a label value and part of the Lease name. */
export function ledgerId(ref: WorkloadRef): string {
  const key = workloadKey(ref);
  let id = idCache.get(key);
  if (id === undefined) {
    id = createHash("sha256").update(key).digest("hex").slice(0, 20);
    if (idCache.size >= 10_000) idCache.clear();
    idCache.set(key, id);
  }
  return id;
}
const idCache = new Map<string, string>();

export function emptyLedger(ref: WorkloadRef): Ledger {
  return { workload: workloadKey(ref), reconciledAt: 0, entries: new Map(), fallbackUntil: 0 };
}

export function cloneLedger(l: Ledger): Ledger {
  return {
    workload: l.workload,
    reconciledAt: l.reconciledAt,
    entries: new Map([...l.entries].map(([k, e]) => [k, { ...e }])),
    fallbackUntil: l.fallbackUntil,
  };
}

/** Whether an entry of `entry` revision counts toward a pod of revision `revision`. */
export const sameRevision = (entry: string, revision: string | undefined): boolean =>
  revision === undefined || revision === "" || entry === "" || entry === revision;

/** Slots held, of one revision when given (entries of unknown revision count for every one). */
export function counts(l: Ledger, revision?: string, source?: string): { onDemand: number; spot: number } {
  let onDemand = 0;
  let spot = 0;
  for (const e of l.entries.values()) {
    if (!sameRevision(e.revision, revision) || !countsFor(e, source)) continue;
    if (e.capacity === ON_DEMAND) onDemand++;
    else spot++;
  }
  return { onDemand, spot };
}

/**
 * Whether `e` counts for a review from `source` (undefined: every entry counts): another address's
 * reservation only once its pod was seen (issue 42).
 */
export function countsFor(e: LedgerEntry, source: string | undefined): boolean {
  return source === undefined || e.confirmedAt > 0 || !e.source || e.source === source;
}

// Compact wire form, stored in one annotation:
// {"v":1,"r":reconciledAt,"f"?:fallbackUntil,"e":{token:["o"|"s",reservedAt,confirmedAt,revision?,source?]}}.
// Entries written before revisions existed have three fields (revision ""); before sources, four.
interface Wire {
  v: 1;
  w: string;
  r: number;
  f?: number;
  e: Record<
    string,
    [string, number, number] | [string, number, number, string] | [string, number, number, string, string]
  >;
}

export function serializeLedger(l: Ledger): string {
  const e: Wire["e"] = {};
  for (const [token, entry] of l.entries) {
    const c = entry.capacity === ON_DEMAND ? "o" : "s";
    // The source matters only until the pod is seen: confirmed entries drop it (and stay short).
    e[token] =
      entry.source && entry.confirmedAt === 0
        ? [c, entry.reservedAt, entry.confirmedAt, entry.revision, entry.source]
        : entry.revision === ""
          ? [c, entry.reservedAt, entry.confirmedAt]
          : [c, entry.reservedAt, entry.confirmedAt, entry.revision];
  }
  const wire: Wire = { v: 1, w: l.workload, r: l.reconciledAt, e };
  if (l.fallbackUntil > 0) wire.f = l.fallbackUntil;
  return JSON.stringify(wire);
}

export class LedgerFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "LedgerFormatError";
  }
}

const isFiniteNumber = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

export function parseLedger(text: string): Ledger {
  let wire: unknown;
  try {
    wire = JSON.parse(text);
  } catch {
    throw new LedgerFormatError("ledger state is not JSON");
  }
  if (typeof wire !== "object" || wire === null) throw new LedgerFormatError("ledger state is not an object");
  const { v, w, r, e, f } = wire as Record<string, unknown>;
  if (v !== 1)
    throw new LedgerFormatError(`unsupported ledger version ${v === undefined ? "none" : JSON.stringify(v)}`);
  if (typeof w !== "string" || !isFiniteNumber(r) || typeof e !== "object" || e === null)
    throw new LedgerFormatError("ledger state is missing fields");
  if (f !== undefined && !isFiniteNumber(f)) throw new LedgerFormatError("bad fallback time");
  const entries = new Map<string, LedgerEntry>();
  for (const [token, raw] of Object.entries(e as Record<string, unknown>)) {
    if (!Array.isArray(raw) || raw.length < 3 || raw.length > 5)
      throw new LedgerFormatError(`bad entry ${token}`);
    const [c, reservedAt, confirmedAt, revision = "", source = ""] = raw as unknown[];
    if (
      (c !== "o" && c !== "s") ||
      !isFiniteNumber(reservedAt) ||
      !isFiniteNumber(confirmedAt) ||
      typeof revision !== "string" ||
      typeof source !== "string"
    )
      throw new LedgerFormatError(`bad entry ${token}`);
    const entry: LedgerEntry = { capacity: c === "o" ? ON_DEMAND : SPOT, reservedAt, confirmedAt, revision };
    if (source !== "") entry.source = source;
    entries.set(token, entry);
  }
  return { workload: w, reconciledAt: r, entries, fallbackUntil: f ?? 0 };
}

/**
 * Assigns a capacity to each new pod, in order, and records the slots (mutates `ledger`).
 * A pod of revision R goes on-demand while R's on-demand slots < onDemandTarget(R's total incl.
 * this pod), so dead on-demand pods (dropped by reconcile) are refilled before any new spot pod,
 * and a rollout's new revision gets its own N while the old one still runs. An unbacked request
 * (no real pod about to be created) never takes an on-demand slot and records nothing. A request
 * that would be recorded in a ledger already holding `maxEntries` is marked `full` (a bare token
 * throws instead).
 */
export function reserve(
  ledger: Ledger,
  policy: SpotPolicy,
  requests: readonly (string | SlotRequest)[],
  now: number,
  maxEntries = Infinity,
): Capacity[] {
  const total = tracksTotal(policy);
  /** Counts per revision and source, as each review sees them (another source's unconfirmed do not count). */
  const held = new Map<
    string,
    { revision: string; source: string | undefined; onDemand: number; spot: number }
  >();
  return requests.map((r) => {
    const { token, revision = "", backed = true, source } = typeof r === "string" ? { token: r } : r;
    if (!backed) return SPOT;
    const key = `${revision}\u0000${source ?? "\u0000"}`;
    let c = held.get(key);
    if (!c) {
      c = { revision, source, ...counts(ledger, revision, source) };
      if (!total) c.spot = 0; // leftover spot entries (policy changed) do not count
      held.set(key, c);
    }
    const capacity: Capacity =
      c.onDemand < onDemandTarget(policy, c.onDemand + c.spot + 1) ? ON_DEMAND : SPOT;
    if (capacity === ON_DEMAND || total) {
      if (ledger.entries.size >= maxEntries) {
        if (typeof r === "string") throw new LedgerFormatError(`ledger full (${maxEntries} slots)`);
        r.full = true;
        return SPOT;
      }
      const entry: LedgerEntry = { capacity, reservedAt: now, confirmedAt: 0, revision };
      if (source) entry.source = source;
      ledger.entries.set(token, entry);
      // Counts of other revisions cached in `held` may include this slot (revision "" counts for all).
      for (const other of held.values())
        if (sameRevision(revision, other.revision) && countsFor(entry, other.source)) {
          if (capacity === ON_DEMAND) other.onDemand++;
          else other.spot++;
        }
    }
    return capacity;
  });
}

/** Whether reserving would place at least one pod on spot while on-demand slots are held. */
export function wouldAssignSpot(ledger: Ledger, policy: SpotPolicy, n: number, revision = ""): boolean {
  if (n === 0) return false;
  const probe = cloneLedger(ledger);
  return reserve(
    probe,
    policy,
    Array.from({ length: n }, (_, i) => ({ token: `probe-${i}`, revision })),
    0,
  ).includes(SPOT);
}

/** The capacity the next pod of `revision` would get (nothing is recorded). */
/**
 * The capacity the next pod of `revision` would get, counting the slots of pods seen and those of
 * no known address (the repair's question): an unconfirmed reservation of a review's address —
 * the apiserver's, or a forger's that no pod will ever follow — neither holds nor frees a slot
 * for the repair, so it never evicts for, nor waits on, an unverified slot (issue 42).
 */
export function nextCapacity(ledger: Ledger, policy: SpotPolicy, revision = ""): Capacity {
  return (
    reserve(cloneLedger(ledger), policy, [{ token: "probe", revision, source: VERIFIED_ONLY }], 0)[0] ?? SPOT
  );
}

/** A source no review has: counts only confirmed (and address-less) slots. */
const VERIFIED_ONLY = "\u0000verified";

export function isLivePod(pod: Pod): boolean {
  const phase = pod.status?.phase;
  return pod.metadata.deletionTimestamp === undefined && phase !== "Succeeded" && phase !== "Failed";
}

/**
 * Reconciles the ledger with the workload's pods (those carrying its ledger label), listed by a
 * consistent read (or taken from the pod watch's cache) that started at `listStartedAt` and
 * returned at `listEndedAt`. Pods are the truth: a live pod's slot is kept (or re-added after a
 * lost ledger), a terminating/finished pod's slot is freed, a slot whose pod the watch saw and
 * then saw deleted (`gone`) is freed at once, a confirmed slot whose pod vanished since it was
 * last seen is freed, and an unconfirmed reservation older than the TTL (the pod was never
 * created) is freed. Reservations younger than that are in-flight admissions and stay.
 */
export function reconcile(
  ledger: Ledger,
  policy: SpotPolicy,
  pods: readonly Pod[],
  listStartedAt: number,
  listEndedAt: number,
  timing: LedgerTiming = DEFAULT_TIMING,
  gone: (token: string) => boolean = () => false,
): Ledger {
  const total = tracksTotal(policy);
  const next = cloneLedger(ledger);
  const listed = new Set<string>();
  for (const pod of pods) {
    const token = pod.metadata.labels?.[SLOT_LABEL];
    const label = pod.metadata.labels?.[ASSIGNMENT_LABEL];
    if (token === undefined || (label !== ON_DEMAND && label !== SPOT)) continue;
    listed.add(token);
    if (!isLivePod(pod)) {
      next.entries.delete(token);
      continue;
    }
    const entry = next.entries.get(token);
    if (entry) {
      entry.confirmedAt = Math.max(entry.confirmedAt, listEndedAt);
      if (entry.revision === "") entry.revision = revisionOf(pod);
    } else if (label === ON_DEMAND || total)
      next.entries.set(token, {
        capacity: label,
        reservedAt: listStartedAt,
        confirmedAt: listEndedAt,
        revision: revisionOf(pod),
      });
  }
  for (const [token, e] of next.entries) {
    if (!total && e.capacity === SPOT) next.entries.delete(token);
    else if (listed.has(token)) continue;
    else if (gone(token)) next.entries.delete(token);
    else if (
      e.confirmedAt > 0
        ? e.confirmedAt + timing.skewMs < listStartedAt
        : e.reservedAt + timing.reservationTtlMs < listStartedAt
    )
      next.entries.delete(token);
  }
  next.reconciledAt = Math.max(ledger.reconciledAt, listStartedAt);
  return next;
}

/**
 * Records the slots of running pods adopted into the ledger (issue 28): each as a slot confirmed
 * now, of the capacity the pod runs on, so an admission racing the adoption counts them before
 * the pod watch shows their new labels (and the watch confirms them from then on). Spot slots are
 * recorded only when the policy tracks the total, as at admission. Mutates `ledger`.
 */
export function adoptSlots(
  ledger: Ledger,
  policy: SpotPolicy,
  slots: readonly { token: string; capacity: Capacity; revision: string }[],
  now: number,
): void {
  const total = tracksTotal(policy);
  for (const s of slots)
    if (s.capacity === ON_DEMAND || total)
      ledger.entries.set(s.token, {
        capacity: s.capacity,
        reservedAt: now,
        confirmedAt: now,
        revision: s.revision,
      });
}
