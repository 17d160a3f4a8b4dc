// Which core replica owns a cluster's live state (ADR 0012). The owner is the replica its agent
// streams to: it holds the cluster's ClusterState, samples its history and answers its live reads;
// every other replica reads that cluster through the owner's API. Ownership is a lease row in the
// shared store: taken (by force — the newest stream wins) when an agent says hello, renewed while
// the replica lives, released on a clean stop, and simply left to expire when the replica dies.
//
// SoleOwnership is the one-replica case (SQLite, `wave start`): this process owns every cluster.
import type { ClusterLease, Store } from "../store/store.ts";
import type { Clock } from "../../shared/clock.ts";
import type { Logger } from "../../shared/log.ts";

export interface Owner {
  /** The replica holding the lease. */
  holder: string;
  /** Its API base URL. */
  url: string;
}

export interface Ownership {
  /** This replica's identity. */
  readonly replica: string;
  /** The cluster's agent now streams to this replica: take the cluster (newest stream wins). */
  claim(clusterId: string): Promise<void>;
  /** Whether this replica owns the cluster's live state. */
  owns(clusterId: string): boolean;
  /** The live owner when it is another replica; undefined when it is this one or nobody. */
  otherOwner(clusterId: string): Promise<Owner | undefined>;
  /** A read through `owner` failed: treat it as gone until its lease changes or expires. */
  unreachable(clusterId: string, owner: Owner): void;
  /** Called when another replica took a cluster from this one. */
  onLost(fn: (clusterId: string) => void): () => void;
  /** Renews the leases until `signal` aborts, then releases them. */
  run(signal: AbortSignal): Promise<void>;
}

/** One replica: it owns every cluster, and there is nobody to read through. */
export class SoleOwnership implements Ownership {
  readonly replica: string;
  constructor(replica = "core") {
    this.replica = replica;
  }
  claim(): Promise<void> {
    return Promise.resolve();
  }
  owns(): boolean {
    return true;
  }
  otherOwner(): Promise<Owner | undefined> {
    return Promise.resolve(undefined);
  }
  unreachable(): void {}
  onLost(): () => void {
    return () => undefined;
  }
  run(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal.aborted) resolve();
      else signal.addEventListener("abort", () => resolve(), { once: true });
    });
  }
}

export interface LeaseOwnershipOptions {
  store: Store;
  clock: Clock;
  log: Logger;
  /** This replica's identity (the pod name). */
  replica: string;
  /** This replica's API base URL as the others reach it (read when a cluster is claimed). */
  url: string | (() => string);
  /** How long a lease lasts without renewal (default 15 s). */
  ttlMs?: number;
  /** How often leases are renewed (default ttl / 3). */
  renewMs?: number;
  /** How long the lease table read for otherOwner() is reused (default 1 s). */
  cacheMs?: number;
}

export class LeaseOwnership implements Ownership {
  readonly replica: string;
  readonly #o: LeaseOwnershipOptions;
  readonly #ttlMs: number;
  readonly #renewMs: number;
  readonly #cacheMs: number;
  readonly #held = new Set<string>();
  readonly #lost = new Set<(clusterId: string) => void>();
  /** Owners a read through failed for, by cluster, and when. */
  readonly #unreachable = new Map<string, { holder: string; at: number }>();
  #leases: { at: number; byCluster: Promise<Map<string, ClusterLease>> } | undefined;

  constructor(o: LeaseOwnershipOptions) {
    this.#o = o;
    this.replica = o.replica;
    this.#ttlMs = o.ttlMs ?? 15_000;
    this.#renewMs = o.renewMs ?? Math.max(1, Math.floor(this.#ttlMs / 3));
    this.#cacheMs = o.cacheMs ?? 1_000;
  }

  async claim(clusterId: string): Promise<void> {
    const { store, clock, replica } = this.#o;
    const url = typeof this.#o.url === "string" ? this.#o.url : this.#o.url();
    const lease = await store.acquireLease({
      clusterId,
      holder: replica,
      url,
      now: clock.now(),
      ttlMs: this.#ttlMs,
      force: true,
    });
    this.#held.add(clusterId);
    this.#leases = undefined;
    this.#o.log.info("cluster owned", { cluster: clusterId, generation: lease.generation });
  }

  owns(clusterId: string): boolean {
    return this.#held.has(clusterId);
  }

  async otherOwner(clusterId: string): Promise<Owner | undefined> {
    if (this.#held.has(clusterId)) return undefined;
    const now = this.#o.clock.now();
    if (!this.#leases || now - this.#leases.at >= this.#cacheMs) {
      const byCluster = this.#o.store.leases().then((ls) => new Map(ls.map((l) => [l.clusterId, l])));
      this.#leases = { at: now, byCluster };
      byCluster.catch(() => {
        if (this.#leases?.byCluster === byCluster) this.#leases = undefined;
      });
    }
    const lease = (await this.#leases.byCluster).get(clusterId);
    if (!lease || lease.expiresAt <= now || lease.holder === this.replica) return undefined;
    const bad = this.#unreachable.get(clusterId);
    // A dead owner's lease runs on until it expires: not renewed since a read failed → skip it.
    if (bad?.holder === lease.holder && lease.renewedAt <= bad.at) return undefined;
    this.#unreachable.delete(clusterId);
    return { holder: lease.holder, url: lease.url };
  }

  unreachable(clusterId: string, owner: Owner): void {
    // Until the owner renews its lease again (it is back) or the lease changes hands.
    this.#unreachable.set(clusterId, { holder: owner.holder, at: this.#o.clock.now() });
    this.#leases = undefined;
  }

  onLost(fn: (clusterId: string) => void): () => void {
    this.#lost.add(fn);
    return () => this.#lost.delete(fn);
  }

  async run(signal: AbortSignal): Promise<void> {
    const { store, clock, log, replica } = this.#o;
    while (!signal.aborted) {
      try {
        await clock.sleep(this.#renewMs, signal);
      } catch {
        break;
      }
      const held = [...this.#held];
      if (held.length === 0) continue;
      try {
        const kept = new Set(await store.renewLeases(replica, held, clock.now(), this.#ttlMs));
        for (const id of held) {
          // A claim may have re-taken it while the renewal ran.
          if (kept.has(id) || !this.#held.has(id)) continue;
          this.#held.delete(id);
          log.info("cluster taken over by another core replica", { cluster: id });
          for (const fn of this.#lost) fn(id);
        }
      } catch (err) {
        // Nobody can take a lease from us while the store is down either: keep them, retry.
        log.warn("renewing cluster leases failed", { err });
      }
    }
    // A clean stop: give the clusters up at once, so the others stop reading through us.
    for (const id of this.#held) {
      await store.releaseLease(id, replica).catch((err: unknown) => {
        log.warn("releasing a cluster lease failed", { cluster: id, err });
      });
    }
    this.#held.clear();
  }
}
