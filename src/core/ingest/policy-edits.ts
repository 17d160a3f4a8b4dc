// Core's side of policy edits (ADR 0018): an API request's change to a SpotPolicy/WarmupPolicy goes
// down the stream of its cluster's agent, and the request waits for the agent's answer — at most
// `timeoutMs`, and never on a cluster whose agent is not streaming (the edit would go nowhere).
import type { Clock } from "../../shared/clock.ts";
import { realClock } from "../../shared/clock.ts";
import type { WirePolicyEdit, WirePolicyEditResult } from "../../wire/policy-edit.ts";

/** Why an edit got no answer from the agent: the API answers 503 (disconnected) or 504 (timeout). */
export class PolicyEditUnavailable extends Error {
  readonly reason: "disconnected" | "timeout";
  constructor(reason: "disconnected" | "timeout", message: string) {
    super(message);
    this.name = "PolicyEditUnavailable";
    this.reason = reason;
  }
}

export type PolicyEditRequest = Omit<WirePolicyEdit, "id">;

interface Pending {
  clusterId: string;
  stream: object;
  resolve: (r: WirePolicyEditResult) => void;
  reject: (e: Error) => void;
  stop: AbortController;
}

export class PolicyEdits {
  readonly #clock: Clock;
  readonly #timeoutMs: number;
  #nextId = 1;
  /** The stream feeding each cluster: how to send it an edit. */
  readonly #streams = new Map<string, { token: object; send: (e: WirePolicyEdit) => void }>();
  readonly #pending = new Map<number, Pending>();

  constructor(opts: { clock?: Clock; timeoutMs?: number } = {}) {
    this.#clock = opts.clock ?? realClock;
    this.#timeoutMs = opts.timeoutMs ?? 20_000;
  }

  readonly #onAttach = new Set<(clusterId: string) => void>();

  /** Calls `fn` each time a cluster's agent stream can take edits (the migration runs then). */
  onAttach(fn: (clusterId: string) => void): () => void {
    this.#onAttach.add(fn);
    return () => this.#onAttach.delete(fn);
  }

  /** A stream took over `clusterId`; returns its detach, which fails the edits still waiting on it. */
  attach(clusterId: string, send: (e: WirePolicyEdit) => void): () => void {
    const token = {};
    this.#streams.set(clusterId, { token, send });
    for (const fn of this.#onAttach) fn(clusterId);
    return () => {
      if (this.#streams.get(clusterId)?.token === token) this.#streams.delete(clusterId);
      for (const [id, p] of this.#pending) {
        if (p.stream !== token) continue;
        this.#pending.delete(id);
        p.stop.abort();
        p.reject(
          new PolicyEditUnavailable(
            "disconnected",
            `the agent of cluster ${clusterId} disconnected before answering; the edit may or may not have been applied`,
          ),
        );
      }
    };
  }

  connected(clusterId: string): boolean {
    return this.#streams.has(clusterId);
  }

  /** The agent's answer to edit `result.id`; an answer nobody waits for (timed out) is dropped. */
  settle(clusterId: string, result: WirePolicyEditResult): void {
    const p = this.#pending.get(result.id);
    if (!p || p.clusterId !== clusterId) return;
    this.#pending.delete(result.id);
    p.stop.abort();
    p.resolve(result);
  }

  edit(
    clusterId: string,
    req: PolicyEditRequest,
    timeoutMs = this.#timeoutMs,
  ): Promise<WirePolicyEditResult> {
    const stream = this.#streams.get(clusterId);
    if (!stream) {
      return Promise.reject(
        new PolicyEditUnavailable(
          "disconnected",
          `the agent of cluster ${clusterId} is not connected: policies are changed through it, try again when it is`,
        ),
      );
    }
    const id = this.#nextId++;
    return new Promise<WirePolicyEditResult>((resolve, reject) => {
      const stop = new AbortController();
      this.#pending.set(id, { clusterId, stream: stream.token, resolve, reject, stop });
      this.#clock.sleep(timeoutMs, stop.signal).then(
        () => {
          if (!this.#pending.delete(id)) return;
          reject(
            new PolicyEditUnavailable(
              "timeout",
              `the agent of cluster ${clusterId} did not answer within ${Math.round(timeoutMs / 1000)} s; the edit may still be applied`,
            ),
          );
        },
        () => undefined,
      );
      stream.send({ ...req, id });
    });
  }
}
