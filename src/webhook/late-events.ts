// Late answers as Kubernetes Events on the workload, so core learns them the way it learns the
// spot repair's actions (the agent forwards Events; the webhook's Prometheus counter never reaches
// core). "Late" is exactly what wave_spot_late_answers_total counts (review.ts: a slot granted
// after the fallback went out). Aggregated: at most one Event per workload per window, carrying
// the count since the last one, so an admission storm cannot flood the apiserver. Recording never
// blocks admission: record() only bumps a counter; flush() writes fire-and-forget.
import type { Event } from "../objects/kube.ts";
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from "../objects/wave.ts";
import type { Logger } from "../shared/log.ts";
import { REPAIR_COMPONENT } from "./events.ts";

export const LATE_ANSWER_REASON = "WaveSpotLateAnswer";
export const LATE_ANSWER_WINDOW_MS = 60_000;
/** Workloads with pending counts kept at most; beyond it new workloads are dropped (and logged). */
export const LATE_ANSWER_MAX_PENDING = 1000;

export type EventWriter = (event: Event) => Promise<unknown>;

/** "namespace/Kind/name" → the Event on that workload, carrying `count` late answers. */
export function lateAnswerEvent(workload: string, count: number, now: number, instance: string): Event {
  const [namespace = "", kind = "", name = ""] = workload.split("/");
  const ts = new Date(now).toISOString().replace(/\.\d{3}Z$/, "Z");
  return {
    apiVersion: "v1",
    kind: "Event",
    metadata: {
      name: `${name}.${now.toString(16)}`.slice(0, 253),
      namespace,
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE },
    },
    involvedObject: { apiVersion: "apps/v1", kind, namespace, name },
    reason: LATE_ANSWER_REASON,
    message: `${workload}: ${count} late answer(s): slots granted after the on-demand fallback went out`,
    type: "Normal",
    count,
    firstTimestamp: ts,
    lastTimestamp: ts,
    action: "LateAnswer",
    reportingComponent: REPAIR_COMPONENT,
    reportingInstance: instance,
    source: { component: REPAIR_COMPONENT },
  };
}

export class LateAnswerRecorder {
  readonly #pending = new Map<string, number>();
  readonly #lastWrite = new Map<string, number>();
  readonly #write: EventWriter;
  readonly #log: Logger;
  readonly #instance: string;

  constructor(opts: { write: EventWriter; logger: Logger; instance: string }) {
    this.#write = opts.write;
    this.#log = opts.logger;
    this.#instance = opts.instance;
  }

  record(workload: string): void {
    const n = this.#pending.get(workload);
    if (n === undefined && this.#pending.size >= LATE_ANSWER_MAX_PENDING) {
      this.#log.debug("late answer not recorded: pending queue full", { workload });
      return;
    }
    this.#pending.set(workload, (n ?? 0) + 1);
  }

  /** Writes one Event per workload whose last one is a window old; call it on a tick. */
  flush(now: number): void {
    for (const [workload, count] of this.#pending) {
      const last = this.#lastWrite.get(workload);
      if (last !== undefined && now - last < LATE_ANSWER_WINDOW_MS) continue;
      this.#pending.delete(workload);
      this.#lastWrite.set(workload, now);
      this.#write(lateAnswerEvent(workload, count, now, this.#instance)).catch((err: unknown) =>
        this.#log.debug("late-answer event write failed", { workload, error: String(err) }),
      );
    }
  }
}
