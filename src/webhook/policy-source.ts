// Where the webhook's policies come from: set in memory by the process that runs it
// (InMemoryPolicySource), or pulled from a file or core's HTTP endpoint. Either way the
// webhook keeps serving the last valid set when the source is down or sends garbage.
import { readFile } from "node:fs/promises";
import type { Clock } from "../shared/clock.ts";
import { silentLogger, type Logger } from "../shared/log.ts";
import {
  PolicyIndex,
  parsePolicySet,
  type SpotPolicy,
  type SpotPolicySet,
  type WorkloadRef,
} from "./policy.ts";

export interface PolicySource {
  /** The policy for a workload under the last known set, if any. */
  lookup(ref: WorkloadRef): SpotPolicy | undefined;
  /** Revision of the set in force (undefined before the first one). */
  readonly revision: string | undefined;
}

const EMPTY: SpotPolicySet = { apiVersion: "wave.sh/v1alpha1", kind: "SpotPolicySet", policies: [] };

export class InMemoryPolicySource implements PolicySource {
  #index: PolicyIndex;

  constructor(initial: SpotPolicySet = EMPTY) {
    this.#index = new PolicyIndex(initial);
  }

  /** Replaces the set (validated first: a bad set throws and the old one stays in force). */
  set(input: unknown): void {
    this.#index = new PolicyIndex(parsePolicySet(input));
  }

  lookup(ref: WorkloadRef): SpotPolicy | undefined {
    return this.#index.get(ref);
  }

  get revision(): string | undefined {
    return this.#index.revision;
  }

  get size(): number {
    return this.#index.size;
  }
}

export interface PullPolicySourceOptions {
  /** Returns the raw JSON of a SpotPolicySet. */
  load: (signal: AbortSignal) => Promise<string>;
  clock: Clock;
  intervalMs?: number;
  logger?: Logger;
  /** Human-readable origin for logs. */
  origin: string;
}

/** Polls a loader; the last valid set stays in force across errors. */
export class PullPolicySource implements PolicySource {
  readonly #store = new InMemoryPolicySource();
  readonly #opts: PullPolicySourceOptions;
  readonly #log: Logger;
  readonly #abort = new AbortController();
  #loop: Promise<void> | undefined;
  /** Last error (undefined after a successful pull). */
  lastError: string | undefined;
  lastSuccessAt: number | undefined;

  constructor(opts: PullPolicySourceOptions) {
    this.#opts = opts;
    this.#log = (opts.logger ?? silentLogger).child({ component: "policy-source", origin: opts.origin });
  }

  static fromFile(path: string, opts: Omit<PullPolicySourceOptions, "load" | "origin">): PullPolicySource {
    return new PullPolicySource({ ...opts, origin: path, load: () => readFile(path, "utf8") });
  }

  /** Pulls from core's API (GET, JSON). Non-2xx responses are errors; the old set stays. */
  static fromUrl(
    url: string,
    opts: Omit<PullPolicySourceOptions, "load" | "origin"> & {
      headers?: Record<string, string>;
      timeoutMs?: number;
    },
  ): PullPolicySource {
    const load = async (signal: AbortSignal): Promise<string> => {
      const res = await fetch(url, {
        headers: { accept: "application/json", ...opts.headers },
        signal: AbortSignal.any([signal, AbortSignal.timeout(opts.timeoutMs ?? 5000)]),
      });
      if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status}`);
      return res.text();
    };
    return new PullPolicySource({ ...opts, origin: url, load });
  }

  lookup(ref: WorkloadRef): SpotPolicy | undefined {
    return this.#store.lookup(ref);
  }

  get revision(): string | undefined {
    return this.#store.revision;
  }

  /** One pull; resolves true when a new set was installed. Never throws. */
  async refresh(): Promise<boolean> {
    try {
      const text = await this.#opts.load(this.#abort.signal);
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        throw new Error("policy set is not valid JSON");
      }
      this.#store.set(json);
      this.lastError = undefined;
      this.lastSuccessAt = this.#opts.clock.now();
      return true;
    } catch (err) {
      this.lastError = err instanceof Error ? err.message : String(err);
      this.#log.warn("policy pull failed; keeping the last known policies", {
        err: this.lastError,
        revision: this.revision,
      });
      return false;
    }
  }

  /** Pulls now, then every intervalMs until stop(). */
  start(): Promise<boolean> {
    const first = this.refresh();
    this.#loop = (async () => {
      await first;
      const signal = this.#abort.signal;
      while (!signal.aborted) {
        try {
          await this.#opts.clock.sleep(this.#opts.intervalMs ?? 10_000, signal);
        } catch {
          return;
        }
        await this.refresh();
      }
    })();
    return first;
  }

  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#loop;
  }
}
