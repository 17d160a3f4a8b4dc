// The per-workload slot ledger, as pure functions. One ledger per workload records every slot
// Wave handed out that still counts: on-demand slots always, spot slots too when the policy's
// percentage needs the workload's total. Entries are reserved at admission (before the pod exists)
// and reconciled against the live pods that carry the slot token. See docs/adr/0002.
import { createHash } from "node:crypto";
import type { Pod } from "../objects/kube.ts";
import { ASSIGNMENT_LABEL, ON_DEMAND, SLOT_LABEL, SPOT, type Capacity } from "./constants.ts";
import { onDemandTarget, tracksTotal, workloadKey, type SpotPolicy, type WorkloadRef } from "./policy.ts";

export interface LedgerEntry {
  capacity: Capacity;
  /** When the slot was reserved (admission time, ms). */
  reservedAt: number;
  /** End time of the latest pod list that saw the pod; 0 while the pod has not been seen. */
  confirmedAt: number;
}

export interface Ledger {
  /** workloadKey of the workload this ledger counts (guards against id collisions). */
  workload: string;
  /** Start time of the pod list the ledger was last reconciled with (0 = never). */
  reconciledAt: number;
  entries: Map<string, LedgerEntry>;
}

export interface LedgerTiming {
  /** An unconfirmed reservation older than this whose pod is absent is dropped (creation failed). */
  reservationTtlMs: number;
  /** Tolerated clock skew between replicas. */
  skewMs: number;
}

export const DEFAULT_TIMING: LedgerTiming = { reservationTtlMs: 60_000, skewMs: 5_000 };

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
  return { workload: workloadKey(ref), reconciledAt: 0, entries: new Map() };
}

export function cloneLedger(l: Ledger): Ledger {
  return {
    workload: l.workload,
    reconciledAt: l.reconciledAt,
    entries: new Map([...l.entries].map(([k, e]) => [k, { ...e }])),
  };
}

export function counts(l: Ledger): { onDemand: number; spot: number } {
  let onDemand = 0;
  let spot = 0;
  for (const e of l.entries.values()) {
    if (e.capacity === ON_DEMAND) onDemand++;
    else spot++;
  }
  return { onDemand, spot };
}

// Compact wire form, stored in one annotation: {"v":1,"r":reconciledAt,"e":{token:["o"|"s",reservedAt,confirmedAt]}}.
interface Wire {
  v: 1;
  w: string;
  r: number;
  e: Record<string, [string, number, number]>;
}

export function serializeLedger(l: Ledger): string {
  const e: Wire["e"] = {};
  for (const [token, entry] of l.entries)
    e[token] = [entry.capacity === ON_DEMAND ? "o" : "s", entry.reservedAt, entry.confirmedAt];
  const wire: Wire = { v: 1, w: l.workload, r: l.reconciledAt, e };
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
  const { v, w, r, e } = wire as Record<string, unknown>;
  if (v !== 1)
    throw new LedgerFormatError(`unsupported ledger version ${v === undefined ? "none" : JSON.stringify(v)}`);
  if (typeof w !== "string" || !isFiniteNumber(r) || typeof e !== "object" || e === null)
    throw new LedgerFormatError("ledger state is missing fields");
  const entries = new Map<string, LedgerEntry>();
  for (const [token, raw] of Object.entries(e as Record<string, unknown>)) {
    if (!Array.isArray(raw) || raw.length !== 3) throw new LedgerFormatError(`bad entry ${token}`);
    const [c, reservedAt, confirmedAt] = raw as unknown[];
    if ((c !== "o" && c !== "s") || !isFiniteNumber(reservedAt) || !isFiniteNumber(confirmedAt))
      throw new LedgerFormatError(`bad entry ${token}`);
    entries.set(token, { capacity: c === "o" ? ON_DEMAND : SPOT, reservedAt, confirmedAt });
  }
  return { workload: w, reconciledAt: r, entries };
}

/**
 * Assigns a capacity to each new pod, in order, and records the slots (mutates `ledger`).
 * A pod goes on-demand while on-demand slots < onDemandTarget(total incl. this pod), so dead
 * on-demand pods (dropped by reconcile) are refilled before any new spot pod.
 */
export function reserve(
  ledger: Ledger,
  policy: SpotPolicy,
  tokens: readonly string[],
  now: number,
  maxEntries = Infinity,
): Capacity[] {
  const total = tracksTotal(policy);
  let { onDemand, spot } = counts(ledger);
  if (!total) spot = 0; // leftover spot entries (policy changed) do not count
  return tokens.map((token) => {
    const capacity: Capacity = onDemand < onDemandTarget(policy, onDemand + spot + 1) ? ON_DEMAND : SPOT;
    if (capacity === ON_DEMAND) onDemand++;
    else if (total) spot++;
    if (capacity === ON_DEMAND || total) {
      if (ledger.entries.size >= maxEntries) throw new LedgerFormatError(`ledger full (${maxEntries} slots)`);
      ledger.entries.set(token, { capacity, reservedAt: now, confirmedAt: 0 });
    }
    return capacity;
  });
}

/** Whether reserving would place at least one pod on spot while on-demand slots are held. */
export function wouldAssignSpot(ledger: Ledger, policy: SpotPolicy, n: number): boolean {
  if (n === 0) return false;
  const probe = cloneLedger(ledger);
  return reserve(
    probe,
    policy,
    Array.from({ length: n }, (_, i) => `probe-${i}`),
    0,
  ).includes(SPOT);
}

export function isLivePod(pod: Pod): boolean {
  const phase = pod.status?.phase;
  return pod.metadata.deletionTimestamp === undefined && phase !== "Succeeded" && phase !== "Failed";
}

/**
 * Reconciles the ledger with the workload's pods (those carrying its ledger label), listed by a
 * consistent read that started at `listStartedAt` and returned at `listEndedAt`. Pods are the
 * truth: a live pod's slot is kept (or re-added after a lost ledger), a terminating/finished pod's
 * slot is freed, a confirmed slot whose pod vanished since it was last seen is freed, and an
 * unconfirmed reservation older than the TTL (the pod was never created) is freed. Reservations
 * younger than that are in-flight admissions and stay.
 */
export function reconcile(
  ledger: Ledger,
  policy: SpotPolicy,
  pods: readonly Pod[],
  listStartedAt: number,
  listEndedAt: number,
  timing: LedgerTiming = DEFAULT_TIMING,
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
    if (entry) entry.confirmedAt = Math.max(entry.confirmedAt, listEndedAt);
    else if (label === ON_DEMAND || total)
      next.entries.set(token, { capacity: label, reservedAt: listStartedAt, confirmedAt: listEndedAt });
  }
  for (const [token, e] of next.entries) {
    if (!total && e.capacity === SPOT) next.entries.delete(token);
    else if (listed.has(token)) continue;
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
