// Late answers as Kubernetes Events on the workload, so core learns them the way it learns the
// spot repair's actions (the agent forwards Events; the webhook's Prometheus counter never reaches
// core). "Late" is exactly what wave_spot_late_answers_total counts (review.ts: a slot granted
// after the fallback went out). Aggregated: at most one Event per workload per window, carrying
// the count since the last one, so an admission storm cannot flood the apiserver. Recording never
// blocks admission: record() only bumps a counter; flush() writes fire-and-forget. run() flushes
// every window on the injected clock and, when stopped, writes what is left (a shutdown loses
// no count the apiserver accepts).
import type { Event } from "../objects/kube.ts";
import { SPOT_LATE_ANSWER_EVENT_REASON } from "../objects/wave.ts";
import type { Clock } from "../shared/clock.ts";
import type { Logger } from "../shared/log.ts";
import { workloadEvent } from "./events.ts";

export const LATE_ANSWER_REASON = SPOT_LATE_ANSWER_EVENT_REASON;
export const LATE_ANSWER_WINDOW_MS = 60_000;
/** Workloads with pending counts kept at most; beyond it new workloads are dropped (and logged). */
export const LATE_ANSWER_MAX_PENDING = 1000;

export type EventWriter = (event: Event) => Promise<unknown>;

/** Four hex digits of FNV-1a: enough to tell a few writers apart. */
function nameHash(s: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return ((h >>> 0) & 0xffff).toString(16).padStart(4, "0");
}

/** "namespace/Kind/name" → the Event on that workload, carrying `count` late answers. */
export function lateAnswerEvent(workload: string, count: number, now: number, instance: string): Event {
  const kind = workload.split("/")[1] ?? "";
  return workloadEvent({
    workload,
    reason: LATE_ANSWER_REASON,
    message: `${count} late answer(s): slots granted after the on-demand fallback went out`,
    count,
    action: "LateAnswer",
    instance,
    now,
    // Kind and replica in the name too: two replicas (or a Deployment and a StatefulSet of one
    // name) flushing in the same millisecond must not collide and lose a count.
    nameSuffix: nameHash(`${kind}/${instance}`),
  });
}

export class LateAnswerRecorder {
  readonly #pending = new Map<string, number>();
  readonly #lastWrite = new Map<string, number>();
  readonly #inFlight = new Set<Promise<void>>();
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
    for (const [workload, last] of this.#lastWrite)
      if (now - last >= LATE_ANSWER_WINDOW_MS) this.#lastWrite.delete(workload);
    for (const [workload, count] of this.#pending) {
      if (this.#lastWrite.has(workload)) continue;
      this.#pending.delete(workload);
      this.#lastWrite.set(workload, now);
      this.#send(workload, count, now);
    }
  }

  /** Writes every pending count now, whatever the window (shutdown), and waits for the writes. */
  async drain(now: number): Promise<void> {
    for (const [workload, count] of this.#pending) {
      this.#pending.delete(workload);
      this.#lastWrite.set(workload, now);
      this.#send(workload, count, now);
    }
    await Promise.all(this.#inFlight);
  }

  /** Flushes every window on `clock` until `signal` aborts, then drains. */
  async run(clock: Clock, signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        await clock.sleep(LATE_ANSWER_WINDOW_MS, signal);
      } catch {
        break;
      }
      this.flush(clock.now());
    }
    await this.drain(clock.now());
  }

  /** run() in the background; the returned stop() ends it and resolves once the drain is written. */
  start(clock: Clock): () => Promise<void> {
    const ac = new AbortController();
    const running = this.run(clock, ac.signal);
    return async () => {
      ac.abort();
      await running;
    };
  }

  /** A write that fails is logged and drops only its own count; others go on. */
  #send(workload: string, count: number, now: number): void {
    const write = (async () => this.#write(lateAnswerEvent(workload, count, now, this.#instance)))().then(
      () => undefined,
      (err: unknown) => this.#log.warn("late-answer Event not written", { workload, count, err }),
    );
    this.#inFlight.add(write);
    void write.finally(() => this.#inFlight.delete(write));
  }
}
