// Where the webhook's policies come from: set in memory by the process that runs it
// (InMemoryPolicySource), or pulled from a file or core's HTTP endpoint. Either way the
// webhook keeps serving the last valid set when the source is down or sends garbage.
import { readFile } from "node:fs/promises";
import type { Clock } from "../shared/clock.ts";
import { silentLogger, type Logger } from "../shared/log.ts";
import { PolicyIndex, type SpotPolicy, type SpotPolicySet, type WorkloadRef } from "../policy/spot.ts";
import { parsePolicySet } from "../policy/validate-spot.ts";

export interface PolicySource {
  /** The policy for a workload under the last known set, if any. */
  lookup(ref: WorkloadRef): SpotPolicy | undefined;
  /** Revision of the set in force (undefined before the first one). */
  readonly revision: string | undefined;
  /** Every policy of the set in force (the repair controller walks them). */
  all(): SpotPolicy[];
}

const EMPTY: SpotPolicySet = { apiVersion: "wave.sh/v1alpha1", kind: "SpotPolicySet", policies: [] };

/** The set in force and the lookups every source answers from it. */
class IndexedPolicySource implements PolicySource {
  #index = new PolicyIndex(EMPTY);

  /** Puts a validated set in force. */
  protected install(set: SpotPolicySet): void {
    this.#index = new PolicyIndex(set);
  }

  lookup(ref: WorkloadRef): SpotPolicy | undefined {
    return this.#index.get(ref);
  }

  all(): SpotPolicy[] {
    return this.#index.all();
  }

  get revision(): string | undefined {
    return this.#index.revision;
  }

  get size(): number {
    return this.#index.size;
  }
}

export class InMemoryPolicySource extends IndexedPolicySource {
  constructor(initial: SpotPolicySet = EMPTY) {
    super();
    this.install(initial);
  }

  /** Replaces the set (validated first: a bad set throws and the old one stays in force). */
  set(input: unknown): void {
    this.install(parsePolicySet(input));
  }
}

export interface PullPolicySourceOptions {
  /**
   * Returns the raw JSON of a SpotPolicySet. With `watch`, given the revision in force, the source
   * may hold the request until the set differs from it (a long poll).
   */
  load: (signal: AbortSignal, watch?: { revision: string }) => Promise<string>;
  clock: Clock;
  /** Poll interval, and the retry delay of a failed watch. Default 10 s. */
  intervalMs?: number;
  /** Long-poll the source for changes (core's `?watch=true`), polling only as the fallback. */
  watch?: boolean;
  /** Each fetch: how it was made and what it brought (metrics). */
  onFetch?: (delivery: "watch" | "poll", outcome: "changed" | "unchanged" | "error") => void;
  logger?: Logger;
  /** Human-readable origin for logs. */
  origin: string;
}

/** Polls a loader; the last valid set stays in force across errors. */
export class PullPolicySource extends IndexedPolicySource {
  readonly #opts: PullPolicySourceOptions;
  readonly #log: Logger;
  readonly #abort = new AbortController();
  #loop: Promise<void> | undefined;
  /** Last error (undefined after a successful pull). */
  lastError: string | undefined;
  lastSuccessAt: number | undefined;

  constructor(opts: PullPolicySourceOptions) {
    super();
    this.#opts = opts;
    this.#log = (opts.logger ?? silentLogger).child({ component: "policy-source", origin: opts.origin });
  }

  static fromFile(path: string, opts: Omit<PullPolicySourceOptions, "load" | "origin">): PullPolicySource {
    return new PullPolicySource({ ...opts, origin: path, load: () => readFile(path, "utf8") });
  }

  /**
   * Pulls from core's API (GET, JSON). Non-2xx responses are errors; the old set stays. With
   * `watch`, asks core to hold the request until the revision changes (`?watch=true&revision=R&
   * timeoutSeconds=N`), so a policy change reaches every replica within a round trip.
   */
  static fromUrl(
    url: string,
    opts: Omit<PullPolicySourceOptions, "load" | "origin"> & {
      headers?: Record<string, string>;
      timeoutMs?: number;
      /** How long core may hold a watch request. Default 30 s. */
      watchTimeoutSeconds?: number;
    },
  ): PullPolicySource {
    const held = opts.watchTimeoutSeconds ?? 30;
    const load = async (signal: AbortSignal, watch?: { revision: string }): Promise<string> => {
      let target = url;
      if (watch) {
        const u = new URL(url);
        u.searchParams.set("watch", "true");
        u.searchParams.set("revision", watch.revision);
        u.searchParams.set("timeoutSeconds", String(held));
        target = u.toString();
      }
      const res = await fetch(target, {
        headers: { accept: "application/json", ...opts.headers },
        signal: AbortSignal.any([
          signal,
          AbortSignal.timeout((opts.timeoutMs ?? 5000) + (watch ? held * 1000 : 0)),
        ]),
      });
      if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status}`);
      return res.text();
    };
    return new PullPolicySource({ ...opts, origin: url, load });
  }

  /** One pull; resolves true when a new set was installed. Never throws. */
  async refresh(watch = false): Promise<boolean> {
    const before = this.revision;
    const revision = this.revision;
    const delivery = watch && revision !== undefined ? "watch" : "poll";
    try {
      const text = await this.#opts.load(
        this.#abort.signal,
        delivery === "watch" && revision !== undefined ? { revision } : undefined,
      );
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        throw new Error("policy set is not valid JSON");
      }
      this.install(parsePolicySet(json));
      this.lastError = undefined;
      this.lastSuccessAt = this.#opts.clock.now();
      this.#opts.onFetch?.(delivery, this.revision !== before ? "changed" : "unchanged");
      return true;
    } catch (err) {
      if (this.#abort.signal.aborted) return false;
      this.#opts.onFetch?.(delivery, "error");
      this.lastError = err instanceof Error ? err.message : String(err);
      this.#log.warn("policy pull failed; keeping the last known policies", {
        err: this.lastError,
        revision: this.revision,
      });
      return false;
    }
  }

  /**
   * Pulls now, then until stop(): with `watch`, one long poll after another (a failed one is
   * retried after intervalMs, polling meanwhile); without it, every intervalMs.
   */
  start(): Promise<boolean> {
    const first = this.refresh();
    const interval = this.#opts.intervalMs ?? 10_000;
    this.#loop = (async () => {
      await first;
      const signal = this.#abort.signal;
      const clock = this.#opts.clock;
      while (!signal.aborted) {
        const watching =
          this.#opts.watch === true && this.revision !== undefined && this.lastError === undefined;
        try {
          if (!watching) await clock.sleep(interval, signal);
          const before = this.revision;
          const t0 = clock.now();
          await this.refresh(watching);
          // A source that answers a watch at once with the same set does not hold requests (an
          // older core): poll it instead of spinning.
          if (watching && this.revision === before && clock.now() - t0 < 1000)
            await clock.sleep(interval, signal);
        } catch {
          return;
        }
      }
    })();
    return first;
  }

  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#loop;
  }
}
