// Memory tuning for Wave's long-running processes (`wave agent|core|webhook|start`), which sit
// next to Karpenter and should stay small (issue 4: agent + core ≤ half of Karpenter's RSS).
//
// - V8 lets its young generation grow from 1 MiB to 16 MiB per semi-space (64 MiB reserved, ~30 MiB
//   resident) under an allocation burst such as an initial list or snapshot, and keeps it resident
//   afterwards. It is pinned at its initial size: on the rig at 200 nodes agent 171 → 144 MiB and
//   core 218 → 169 MiB RSS, with no slower sync. (`--max-semi-space-size` would do the same but
//   must be given on Node's command line; the growth factor can still be set once running.)
// - `--optimize-for-size` makes V8 grow the old generation less between full collections: the
//   agent and core take watch events and deltas all the time (a heartbeat per Node every ~20 s),
//   and without it their heaps grew ~0.3 MiB/s between collections. At 1,000 nodes: agent
//   172–224 → 148 MiB, core 238–262 → 183 MiB, for ~5 % more of a CPU (live heaps there: ~40–60
//   MiB). On a large heap it costs far more (150k pods: sync CPU 2–3×, the 10 s sync goal
//   missed), so it is on only while the live heap is small: switched after full collections,
//   off above 128 MiB and back on below 96 MiB (sizeMode); at 150k pods the sync then takes 6.8 s.
// - `wave agent` until its initial sync is done: size mode off (heapBurst with the young
//   generation pinned) — the lists and the first snapshot build its whole projection at once.
//   Once synced (settleHeap): what it holds from then on is a steady projection (ADR 0021) and a
//   trickle of watch events, so size mode stays on whatever the heap, the old generation grows by
//   20 % between full collections (V8's own factor lets it double) and one compacting collection
//   returns the sync's garbage and the pages it was spread over. bench:ingest at 5k/150k: agent
//   368 → 311 MiB (settling), then sync CPU 4.2 → 2.2 s and 303 → ~185 MiB (issue 30).
import { PerformanceObserver, constants, type PerformanceEntry } from "node:perf_hooks";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/** Whether the operator already chose a young-generation size (then it is left alone). */
export function semiSpaceConfigured(execArgv: readonly string[], nodeOptions: string | undefined): boolean {
  return [...execArgv, nodeOptions ?? ""].some((a) => /semi[-_]space/.test(a));
}

/**
 * glibc's malloc as the image sets it (Dockerfile ENV; read at process start, so set there, not
 * here): two arenas, and allocations from 128 KiB mapped and given back when freed — with glibc's
 * rising threshold an agent's sync left ~50 MiB of chunk buffers in its arena. bench:ingest runs
 * its processes with it.
 */
export const MALLOC_ENV = {
  MALLOC_ARENA_MAX: "2",
  MALLOC_MMAP_THRESHOLD_: "131072",
  MALLOC_TRIM_THRESHOLD_: "131072",
} as const;

const MiB = 2 ** 20;
type GcEntry = PerformanceEntry & { detail?: { kind?: number } | null };
/** Live heap above which collecting often costs more than the memory it saves. */
export const SIZE_MODE_OFF_ABOVE = 128 * MiB;
/** Live heap below which size mode comes back (apart from the above, so it does not flap). */
export const SIZE_MODE_ON_BELOW = 96 * MiB;

/** Whether V8 should optimize for size, given the heap in use right after a full collection. */
export function sizeMode(current: boolean, usedAfterFullGc: number): boolean {
  if (current && usedAfterFullGc > SIZE_MODE_OFF_ABOVE) return false;
  if (!current && usedAfterFullGc < SIZE_MODE_ON_BELOW) return true;
  return current;
}

let optimizeForSize = false;
/** Whether tuneHeapForService ran (the other functions are no-ops in a process it did not tune). */
let tuned = false;
/** Whether settleHeap ran: size mode stays on. */
let settled = false;
/** The old generation's growth between full collections once settled (V8's own: up to 100 %). */
export const SETTLED_GROWING_PERCENT = 20;
/** Whether tuneHeapForService pinned the young generation. */
let pinned = false;
/** Allocation bursts under way (heapBurst): the tuning is lifted while any is. */
let bursts = 0;
/** V8's gc extension, taken by the first settleHeap. */
let collect: ((opts: { type: "major"; execution: "sync"; flavor: "last-resort" }) => void) | undefined;

/** Whether V8 currently optimizes for size (tuneHeapForService switches it). */
export function optimizingForSize(): boolean {
  return optimizeForSize;
}

/**
 * Tunes V8 for a small resident size (see the header) for the rest of the process. The young
 * generation is left alone when Node's flags size it; returns whether it was pinned.
 */
export function tuneHeapForService(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions: string | undefined = process.env.NODE_OPTIONS,
): boolean {
  tuned = true;
  optimizeForSize = true;
  setFlagsFromString("--optimize-for-size");
  const observer = new PerformanceObserver((list) => {
    const major = list
      .getEntries()
      .some((e) => (e as GcEntry).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR);
    if (!major || bursts > 0 || settled) return;
    const next = sizeMode(optimizeForSize, process.memoryUsage().heapUsed);
    if (next === optimizeForSize) return;
    optimizeForSize = next;
    setFlagsFromString(next ? "--optimize-for-size" : "--no-optimize-for-size");
  });
  observer.observe({ entryTypes: ["gc"] });
  if (semiSpaceConfigured(execArgv, nodeOptions)) return false;
  setFlagsFromString("--semi-space-growth-factor=1");
  pinned = true;
  return true;
}

/**
 * Lifts the tuning for a burst of allocation the process knows to be short (the embedded
 * simulator's day of history at start: with a pinned 1 MiB young generation and size mode, the
 * collector took it from ~12 s to ~40 s). Returns the restore; the young generation may stay grown
 * by a few MiB afterwards. A no-op in a process that was not tuned. `pinYoung`: only size mode is
 * lifted (`wave agent` until its initial sync is done: the lists and the first snapshot build its
 * whole projection, and in size mode — a live heap below 128 MiB at 5k/150k — that sync took
 * 3.6× the CPU; settleHeap then gives the heap back), the young generation, whose growth would
 * stay resident, stays pinned.
 */
export function heapBurst(opts: { pinYoung?: boolean } = {}): () => void {
  bursts++;
  setFlagsFromString("--no-optimize-for-size");
  if (pinned && opts.pinYoung !== true) setFlagsFromString("--semi-space-growth-factor=2");
  let restored = false;
  return () => {
    if (restored) return;
    restored = true;
    bursts--;
    if (bursts > 0) return;
    if (pinned) setFlagsFromString("--semi-space-growth-factor=1");
    if (optimizeForSize) setFlagsFromString("--optimize-for-size");
  };
}

/**
 * For a tuned process whose allocation burst is over and whose live heap stays about the same from
 * now on (the agent after its initial sync, see the header): size mode on for good, a small growth
 * factor, and a compacting collection now — V8's last-resort one, which moves the survivors
 * together and returns the emptied pages (a plain full collection frees the sync's garbage but
 * keeps the pages it was spread over: at 5k/150k V8's heap stayed at 203 MiB for 108 MiB live).
 * May run again after a later burst (a new leader term's lists). A no-op in a process that was not
 * tuned.
 */
export function settleHeap(): void {
  if (!tuned) return;
  if (!settled) {
    settled = true;
    optimizeForSize = true;
    setFlagsFromString(`--optimize-for-size --heap-growing-percent=${SETTLED_GROWING_PERCENT}`);
    // The one way to collect from inside without --expose-gc on the command line (flags given
    // after start take effect for new contexts).
    setFlagsFromString("--expose-gc");
    collect = runInNewContext("gc") as typeof collect;
  }
  collect?.({ type: "major", execution: "sync", flavor: "last-resort" });
}
