// A what-if replay's worker thread (src/sim/whatif-pool.ts starts it): receives a job, replays it
// with clusterWhatif and posts progress (at most every 200 ms), then the report or the error. One
// job at a time; the pool terminates the thread to cancel.
//
// With `parallel`, the candidate's replay runs in a second thread this worker starts (this file
// again, answering "replay" messages) while this one replays the current policy: the two replays
// are independent, so a what-if takes the time of one. The second thread is this worker's child:
// terminating the worker (a cancel, the pool closing, idling out) ends it too.
import { Worker, parentPort, resourceLimits, workerData } from "node:worker_threads";
import { clusterWhatif, whatifReplay, type ClusterWhatifInput, type WhatifHalf } from "./cluster-whatif.ts";
import type { ReplayResult } from "./replay.ts";

export type ToWorker =
  | { type: "run"; id: number; input: ClusterWhatifInput; parallel?: boolean }
  | { type: "replay"; id: number; input: ClusterWhatifInput; half: WhatifHalf };
export type FromWorker =
  | { type: "progress"; id: number; fraction: number }
  | { type: "result"; id: number; report: Awaited<ReturnType<typeof clusterWhatif>> }
  | { type: "replayed"; id: number; result: ReplayResult }
  | { type: "error"; id: number; statusCode: number | undefined; message: string };

const PROGRESS_EVERY_MS = 200;
const WORKER_FILE = import.meta.url;

/** An error as a message: a ClusterWhatifError (400) keeps its status. */
function errorMessage(id: number, err: unknown): FromWorker {
  const e = err as { statusCode?: unknown; message?: unknown };
  return {
    type: "error",
    id,
    statusCode: typeof e.statusCode === "number" ? e.statusCode : undefined,
    message: typeof e.message === "string" ? e.message : String(err),
  };
}

/** An error from the second thread, its status kept. */
class ReplayError extends Error {
  readonly statusCode: number | undefined;
  constructor(message: string, statusCode: number | undefined) {
    super(message);
    this.statusCode = statusCode;
  }
}

/** The second thread, kept for the next jobs. */
let second: Worker | undefined;

function startSecond(): Worker {
  // The same heap limits as this worker's, so a runaway replay fails alone either way.
  second ??= new Worker(new URL(WORKER_FILE), { resourceLimits });
  second.unref();
  return second;
}

// A pool that replays in parallel says so at the start: the second thread loads its modules while
// this one does, not after the first job arrives.
if ((workerData as { parallel?: boolean } | null)?.parallel === true) startSecond();

function candidateElsewhere(
  input: ClusterWhatifInput,
  id: number,
  onProgress: (fraction: number) => void,
): Promise<ReplayResult> {
  const w = startSecond();
  return new Promise<ReplayResult>((resolve, reject) => {
    const onMessage = (m: FromWorker): void => {
      if (m.id !== id) return;
      if (m.type === "progress") {
        onProgress(m.fraction);
        return;
      }
      done();
      if (m.type === "replayed") resolve(m.result);
      else if (m.type === "error") reject(new ReplayError(m.message, m.statusCode));
    };
    const onExit = (): void => {
      done();
      second = undefined;
      reject(new Error("the candidate's replay thread stopped"));
    };
    const onError = (err: Error): void => {
      done();
      second = undefined;
      // As the pool answers for its own workers: a runaway replay is a 503, not a replay bug.
      const oom = (err as { code?: string }).code === "ERR_WORKER_OUT_OF_MEMORY";
      reject(
        oom
          ? new ReplayError(
              `the replay needed more than ${resourceLimits.maxOldGenerationSizeMb ?? "its"} MiB of memory; try a shorter windowHours`,
              503,
            )
          : err,
      );
    };
    const done = (): void => {
      w.off("message", onMessage);
      w.off("exit", onExit);
      w.off("error", onError);
    };
    w.on("message", onMessage);
    w.on("exit", onExit);
    w.on("error", onError);
    w.postMessage({ type: "replay", id, input, half: 1 } satisfies ToWorker);
  });
}

const port = parentPort;
if (port) {
  port.on("message", (msg: ToWorker) => {
    let last = 0;
    const post = (m: FromWorker): void => port.postMessage(m);
    const progress = (fraction: number): void => {
      const t = performance.now();
      if (t - last < PROGRESS_EVERY_MS) return;
      last = t;
      post({ type: "progress", id: msg.id, fraction });
    };
    if (msg.type === "replay") {
      whatifReplay(msg.input, msg.half, progress).then(
        (result) => post({ type: "replayed", id: msg.id, result }),
        (err: unknown) => post(errorMessage(msg.id, err)),
      );
      return;
    }
    clusterWhatif(
      msg.input,
      progress,
      msg.parallel ? (input, onProgress) => candidateElsewhere(input, msg.id, onProgress) : undefined,
    ).then(
      (report) => post({ type: "result", id: msg.id, report }),
      (err: unknown) => {
        // The current policy's replay failed: the candidate's may still be running; stop it.
        if (msg.parallel && second) {
          void second.terminate();
          second = undefined;
        }
        post(errorMessage(msg.id, err));
      },
    );
  });
}
