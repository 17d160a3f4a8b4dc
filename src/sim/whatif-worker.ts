// A what-if replay's worker thread (src/sim/whatif-pool.ts starts it): receives a job, replays it
// with clusterWhatif and posts progress (at most every 200 ms), then the report or the error. One
// job at a time; the pool terminates the thread to cancel.
import { parentPort } from "node:worker_threads";
import { clusterWhatif, type ClusterWhatifInput } from "./cluster-whatif.ts";

export type ToWorker = { type: "run"; id: number; input: ClusterWhatifInput };
export type FromWorker =
  | { type: "progress"; id: number; fraction: number }
  | { type: "result"; id: number; report: Awaited<ReturnType<typeof clusterWhatif>> }
  | { type: "error"; id: number; statusCode: number | undefined; message: string };

const PROGRESS_EVERY_MS = 200;
const port = parentPort;
if (port) {
  port.on("message", (msg: ToWorker) => {
    let last = 0;
    const post = (m: FromWorker): void => port.postMessage(m);
    clusterWhatif(msg.input, (fraction) => {
      const t = performance.now();
      if (t - last < PROGRESS_EVERY_MS) return;
      last = t;
      post({ type: "progress", id: msg.id, fraction });
    }).then(
      (report) => post({ type: "result", id: msg.id, report }),
      (err: unknown) => {
        const e = err as { statusCode?: unknown; message?: unknown; stack?: unknown };
        post({
          type: "error",
          id: msg.id,
          statusCode: typeof e.statusCode === "number" ? e.statusCode : undefined,
          message: typeof e.message === "string" ? e.message : String(err),
        });
      },
    );
  });
}
