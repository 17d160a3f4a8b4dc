// Where core's what-if replays run: worker threads (src/sim/whatif-worker.ts), so a replay's
// minutes of CPU never stall core's event loop. A pool sized to the machine; one replay per
// cluster at a time (a cluster's replays would only compete for the same answer); a bounded queue
// (beyond it a WhatifPoolError 429 with a Retry-After estimate); a job cancelled by its signal
// (queued: dropped; running: its worker terminated, which frees the thread and its heap at once —
// a replay has no state worth keeping). Idle workers exit after a while, so an idle core holds
// no simulator heap. With `parallel` a worker replays the candidate in a second thread of its own
// meanwhile (whatif-worker.ts), which ends with it.
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import type { ClusterWhatifInput, ClusterWhatifReport } from "./cluster-whatif.ts";
import type { FromWorker, ToWorker } from "./whatif-worker.ts";

// The worker's file beside this one: .ts from the sources, .js in the npm package (hack/pack: Node
// does not strip types under node_modules, so the package is compiled).
const WORKER_FILE = import.meta.url.endsWith(".ts") ? "./whatif-worker.ts" : "./whatif-worker.js";

export interface WhatifProgress {
  /** Waiting for a worker (or for the cluster's running replay), or replaying. */
  state: "queued" | "running";
  /** Queued: jobs ahead in the queue (0 = next). */
  position: number;
  /** Share of the replays' simulated time done (0–1). */
  fraction: number;
  /** Since the replay started (0 while queued). */
  elapsedMs: number;
  /** Estimated time left (from the replay's pace; while queued, from recent replays). */
  etaMs: number | undefined;
}

export interface WhatifJob {
  /** Jobs with the same key (the cluster) run one at a time. */
  key: string;
  signal?: AbortSignal;
  onProgress?: (p: WhatifProgress) => void;
}

/** A job the pool refuses or cannot finish: `statusCode` is the HTTP status the API answers. */
export class WhatifPoolError extends Error {
  override name = "WhatifPoolError";
  readonly statusCode: number;
  readonly retryAfterSeconds: number | undefined;
  constructor(message: string, statusCode: number, retryAfterSeconds?: number) {
    super(message);
    this.statusCode = statusCode;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

export interface WhatifPoolOptions {
  /** Worker threads at most (default: the machine's CPUs less one for core, 1–4). */
  size?: number;
  /** Jobs waiting beyond the running ones (default 4). */
  maxQueued?: number;
  /** Old-generation heap limit per worker, MiB (default 512): a runaway replay fails alone. */
  heapMiB?: number;
  /** A worker idle this long exits (default 60 s). */
  idleMs?: number;
  /**
   * Each what-if replays the candidate in a second thread of its worker while the worker replays
   * the current policy (default: on a machine with 2 CPUs or more): a what-if in the time of one
   * replay, at the cost of a second thread while it runs.
   */
  parallel?: boolean;
  /** The machine's CPUs (default `availableParallelism()`): a second thread only where one is free. */
  cpus?: number;
}

/**
 * Whether a what-if starting now gets its second thread: only while the replay threads already
 * running leave two CPUs for it — with several what-ifs at once the later ones replay one policy
 * after the other rather than oversubscribe the machine (and core's own loop with it).
 */
export function secondThread(cpus: number, replayThreads: number): boolean {
  return replayThreads + 2 <= Math.max(2, cpus);
}

/** Worker threads for what-ifs on this machine: its CPUs less one for core's own loop, 1 to 4. */
export function poolSize(cpus = availableParallelism()): number {
  return Math.max(1, Math.min(4, cpus - 1));
}

interface Job extends WhatifJob {
  id: number;
  /** Until posted to its worker (then dropped: the worker holds its own copy). */
  input: ClusterWhatifInput | undefined;
  resolve: (r: ClusterWhatifReport) => void;
  reject: (err: Error) => void;
  startedAt: number;
  fraction: number;
  slot: Slot | undefined;
  onAbort: () => void;
  /** Replaying the candidate in its worker's second thread. */
  parallel: boolean;
}

interface Slot {
  worker: Worker;
  job: Job | undefined;
  idle: NodeJS.Timeout | undefined;
  exited: Promise<void>;
}

const DEFAULT_REPLAY_MS = 30_000;

export class WhatifPool {
  readonly size: number;
  readonly maxQueued: number;
  readonly #heapMiB: number;
  readonly #idleMs: number;
  readonly #parallel: boolean;
  readonly #cpus: number;
  readonly #slots = new Set<Slot>();
  readonly #queue: Job[] = [];
  readonly #runningKeys = new Set<string>();
  /** The last few replays' wall times: the estimate for queued jobs and Retry-After. */
  readonly #recent: number[] = [];
  #nextId = 1;
  #closed = false;
  /** Worker threads not yet exited (a terminated one counts until its exit event). */
  #threads = 0;
  /** Exits of workers terminated by a cancel. */
  readonly #stopping = new Set<Promise<void>>();

  constructor(o: WhatifPoolOptions = {}) {
    this.size = Math.max(1, o.size ?? poolSize());
    this.maxQueued = Math.max(0, o.maxQueued ?? 4);
    this.#heapMiB = o.heapMiB ?? 512;
    this.#idleMs = o.idleMs ?? 60_000;
    this.#cpus = o.cpus ?? availableParallelism();
    this.#parallel = o.parallel ?? this.#cpus >= 2;
  }

  /** Workers alive, jobs running and waiting. */
  stats(): { workers: number; threads: number; running: number; replayThreads: number; queued: number } {
    let running = 0;
    for (const s of this.#slots) if (s.job) running++;
    return {
      workers: this.#slots.size,
      threads: this.#threads,
      running,
      replayThreads: this.#replayThreads(),
      queued: this.#queue.length,
    };
  }

  /** Threads replaying now: one per running what-if, two for those with their second thread. */
  #replayThreads(): number {
    let n = 0;
    for (const s of this.#slots) if (s.job) n += s.job.parallel ? 2 : 1;
    return n;
  }

  /**
   * Seconds to wait before asking again when the queue is full; undefined when a job would be taken.
   * `pending`: what-ifs admitted but not handed to run() yet (their input being gathered) — they
   * count as queued, so a burst is refused before any of it gathers an input (issue 42).
   */
  busy(pending = 0): number | undefined {
    if (this.#queue.length + pending < this.maxQueued) return undefined;
    return this.#retryAfter(pending);
  }

  #typicalMs(): number {
    if (this.#recent.length === 0) return DEFAULT_REPLAY_MS;
    return this.#recent.reduce((a, b) => a + b, 0) / this.#recent.length;
  }

  #retryAfter(pending = 0): number {
    const rounds = Math.ceil((this.#queue.length + pending + 1) / this.size);
    return Math.max(1, Math.ceil((rounds * this.#typicalMs()) / 1000));
  }

  run(input: ClusterWhatifInput, job: WhatifJob): Promise<ClusterWhatifReport> {
    if (this.#closed) return Promise.reject(new WhatifPoolError("core is shutting down", 503));
    if (job.signal?.aborted) return Promise.reject(new WhatifPoolError("cancelled", 499));
    const retry = this.busy();
    if (retry !== undefined)
      return Promise.reject(
        new WhatifPoolError(
          `${this.maxQueued} what-ifs are already waiting for a replay; try again in ${retry} s`,
          429,
          retry,
        ),
      );
    return new Promise<ClusterWhatifReport>((resolve, reject) => {
      const j: Job = {
        ...job,
        id: this.#nextId++,
        input,
        resolve,
        reject,
        startedAt: 0,
        fraction: 0,
        slot: undefined,
        onAbort: () => this.#cancel(j),
        parallel: false,
      };
      job.signal?.addEventListener("abort", j.onAbort, { once: true });
      this.#queue.push(j);
      this.#pump();
      this.#tellQueued();
    });
  }

  /** Stops every worker; running and waiting jobs fail with 503. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const j of this.#queue.splice(0)) this.#settle(j, new WhatifPoolError("core is shutting down", 503));
    const exits: Promise<void>[] = [...this.#stopping];
    for (const s of [...this.#slots]) {
      if (s.job) this.#settle(s.job, new WhatifPoolError("core is shutting down", 503));
      exits.push(s.exited);
      void s.worker.terminate();
    }
    await Promise.all(exits);
  }

  #tellQueued(): void {
    const typical = this.#typicalMs();
    this.#queue.forEach((j, position) =>
      j.onProgress?.({
        state: "queued",
        position,
        fraction: 0,
        elapsedMs: 0,
        etaMs: Math.ceil((position + 1) / this.size + 1) * typical,
      }),
    );
  }

  #pump(): void {
    for (let i = 0; i < this.#queue.length; i++) {
      const j = this.#queue[i] as Job;
      if (this.#runningKeys.has(j.key)) continue;
      const slot = this.#freeSlot();
      if (!slot) return;
      this.#queue.splice(i--, 1);
      this.#start(slot, j);
    }
  }

  #freeSlot(): Slot | undefined {
    for (const s of this.#slots) if (!s.job) return s;
    if (this.#slots.size >= this.size) return undefined;
    const worker = new Worker(new URL(WORKER_FILE, import.meta.url), {
      resourceLimits: { maxOldGenerationSizeMb: this.#heapMiB, maxYoungGenerationSizeMb: 32 },
      workerData: { parallel: this.#parallel },
    });
    worker.unref();
    this.#threads++;
    let exited!: () => void;
    const slot: Slot = {
      worker,
      job: undefined,
      idle: undefined,
      exited: new Promise<void>((r) => (exited = r)),
    };
    worker.on("message", (m: FromWorker) => this.#message(slot, m));
    worker.on("error", (err: Error) => this.#died(slot, err));
    worker.on("exit", () => {
      this.#threads--;
      this.#died(slot, undefined);
      exited();
    });
    this.#slots.add(slot);
    return slot;
  }

  #start(slot: Slot, j: Job): void {
    if (slot.idle) clearTimeout(slot.idle);
    slot.idle = undefined;
    j.parallel = this.#parallel && secondThread(this.#cpus, this.#replayThreads());
    slot.job = j;
    j.slot = slot;
    j.startedAt = performance.now();
    this.#runningKeys.add(j.key);
    j.onProgress?.({ state: "running", position: 0, fraction: 0, elapsedMs: 0, etaMs: this.#typicalMs() });
    const { input } = j;
    j.input = undefined; // cloned into the worker: core's copy goes now, not when the replay ends
    if (input)
      slot.worker.postMessage({ type: "run", id: j.id, input, parallel: j.parallel } satisfies ToWorker);
  }

  #message(slot: Slot, m: FromWorker): void {
    const j = slot.job;
    // "replayed" answers a worker's own second thread, never the pool.
    if (!j || m.id !== j.id || m.type === "replayed") return;
    if (m.type === "progress") {
      j.fraction = m.fraction;
      const elapsedMs = performance.now() - j.startedAt;
      const etaMs = m.fraction > 0.02 ? (elapsedMs * (1 - m.fraction)) / m.fraction : this.#typicalMs();
      j.onProgress?.({ state: "running", position: 0, fraction: m.fraction, elapsedMs, etaMs });
      return;
    }
    this.#recent.push(performance.now() - j.startedAt);
    if (this.#recent.length > 5) this.#recent.shift();
    this.#free(slot);
    if (m.type === "result") this.#settle(j, undefined, m.report);
    // A ClusterWhatifError (400) keeps its status; anything else is a replay bug.
    else this.#settle(j, new WhatifPoolError(m.message, m.statusCode ?? 500));
    this.#pump();
    this.#tellQueued();
  }

  /** The slot's job is done: the worker waits for the next, or exits after idleMs. */
  #free(slot: Slot): void {
    const j = slot.job;
    if (j) this.#runningKeys.delete(j.key);
    slot.job = undefined;
    slot.idle = setTimeout(() => void slot.worker.terminate(), this.#idleMs);
    slot.idle.unref();
  }

  #died(slot: Slot, err: Error | undefined): void {
    if (!this.#slots.delete(slot)) return;
    if (slot.idle) clearTimeout(slot.idle);
    const j = slot.job;
    if (j) {
      this.#runningKeys.delete(j.key);
      const oom = (err as { code?: string } | undefined)?.code === "ERR_WORKER_OUT_OF_MEMORY";
      this.#settle(
        j,
        new WhatifPoolError(
          oom
            ? `the replay needed more than ${this.#heapMiB} MiB of memory; try a shorter windowHours`
            : `the replay's worker stopped${err ? `: ${err.message}` : ""}`,
          503,
        ),
      );
    }
    if (!this.#closed) {
      this.#pump();
      this.#tellQueued();
    }
  }

  #cancel(j: Job): void {
    const at = this.#queue.indexOf(j);
    if (at >= 0) {
      this.#queue.splice(at, 1);
      this.#settle(j, new WhatifPoolError("cancelled", 499));
      this.#tellQueued();
      return;
    }
    const slot = j.slot;
    if (!slot || slot.job !== j) return;
    // Terminating is the only way to stop a replay mid-step; the slot goes with it.
    this.#runningKeys.delete(j.key);
    slot.job = undefined;
    this.#slots.delete(slot);
    if (slot.idle) clearTimeout(slot.idle);
    void slot.worker.terminate();
    this.#stopping.add(slot.exited);
    void slot.exited.then(() => this.#stopping.delete(slot.exited));
    this.#settle(j, new WhatifPoolError("cancelled", 499));
    this.#pump();
    this.#tellQueued();
  }

  #settle(j: Job, err: Error | undefined, report?: ClusterWhatifReport): void {
    j.signal?.removeEventListener("abort", j.onAbort);
    if (err) j.reject(err);
    else if (report) j.resolve(report);
  }
}
