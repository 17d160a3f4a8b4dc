// Leader election over a coordination.k8s.io/v1 Lease, with client-go's semantics: a lease is
// expired when its record has not changed for leaseDurationSeconds *as observed on our own
// clock* (never trusting the holder's timestamps, so clock skew cannot split the brain); the
// leader renews every retryPeriod and steps down if it cannot renew within renewDeadline.
// Writes use the Lease's resourceVersion, so two candidates can never both win a round.
import type { Lease } from "../objects/kube.ts";
import { isConflict, isNotFound, type KubeClient } from "./port.ts";
import type { Clock } from "../shared/clock.ts";
import { silentLogger, type Logger } from "../shared/log.ts";

export interface LeaderElectorOptions {
  client: KubeClient;
  clock: Clock;
  namespace: string;
  /** Lease name, e.g. "wave-warmup". */
  name: string;
  /** This replica's identity (pod name). */
  identity: string;
  leaseDurationSeconds?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  log?: Logger;
}

/** MicroTime as the apiserver writes it: RFC 3339 with microseconds. */
const isAborted = (s: AbortSignal): boolean => s.aborted;

const microTime = (ms: number): string => new Date(ms).toISOString().replace(/Z$/, "000Z");

export class LeaderElector {
  readonly #o: Required<LeaderElectorOptions>;
  #observed: { key: string; at: number } | undefined;
  #leader = false;

  constructor(opts: LeaderElectorOptions) {
    this.#o = {
      leaseDurationSeconds: 15,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
      log: silentLogger,
      ...opts,
    };
    if (this.#o.renewDeadlineMs >= this.#o.leaseDurationSeconds * 1000) {
      throw new Error("leader election: renewDeadlineMs must be shorter than leaseDurationSeconds");
    }
  }

  get isLeader(): boolean {
    return this.#leader;
  }

  /** One acquire-or-renew round; true when this replica holds the lease afterwards. */
  async tryAcquireOrRenew(): Promise<boolean> {
    const { client, clock, namespace, name, identity, leaseDurationSeconds } = this.#o;
    const now = clock.now();
    let lease: Lease;
    try {
      lease = await client.get("Lease", name, namespace);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      try {
        await client.create(
          "Lease",
          {
            apiVersion: "coordination.k8s.io/v1",
            kind: "Lease",
            metadata: { name, namespace },
            spec: {
              holderIdentity: identity,
              leaseDurationSeconds,
              acquireTime: microTime(now),
              renewTime: microTime(now),
              leaseTransitions: 0,
            },
          },
          { namespace },
        );
        return this.#set(true);
      } catch (e) {
        if (isConflict(e)) return this.#set(false);
        throw e;
      }
    }
    const spec = lease.spec;
    const holder = spec.holderIdentity ?? "";
    // Track when *we* last saw the record change.
    const key = `${holder}|${spec.renewTime ?? ""}|${lease.metadata.resourceVersion ?? ""}`;
    if (this.#observed?.key !== key) this.#observed = { key, at: now };
    const duration = (spec.leaseDurationSeconds ?? leaseDurationSeconds) * 1000;
    const expired = holder === "" || this.#observed.at + duration <= now;
    if (holder !== identity && !expired) return this.#set(false);
    const next: Lease = {
      ...lease,
      spec: {
        holderIdentity: identity,
        leaseDurationSeconds,
        acquireTime: holder === identity ? (spec.acquireTime ?? microTime(now)) : microTime(now),
        renewTime: microTime(now),
        leaseTransitions: (spec.leaseTransitions ?? 0) + (holder === identity || holder === "" ? 0 : 1),
      },
    };
    try {
      await client.replace("Lease", next, { namespace });
      return this.#set(true);
    } catch (err) {
      if (isConflict(err)) return this.#set(false);
      throw err;
    }
  }

  #set(leader: boolean): boolean {
    if (leader !== this.#leader)
      this.#o.log.info(leader ? "became leader" : "not leader", { lease: this.#o.name });
    this.#leader = leader;
    return leader;
  }

  /**
   * Campaigns until `signal` aborts. While leading, `lead` runs with a signal that aborts when
   * leadership is lost (or on shutdown); then the campaign resumes.
   */
  async run(signal: AbortSignal, lead: (leading: AbortSignal) => Promise<void>): Promise<void> {
    const { clock, retryPeriodMs, renewDeadlineMs, log } = this.#o;
    const round = async (): Promise<boolean> => {
      try {
        return await this.tryAcquireOrRenew();
      } catch (err) {
        log.warn("lease round failed", { error: err });
        return false;
      }
    };
    const pause = async (): Promise<boolean> => {
      try {
        await clock.sleep(retryPeriodMs, signal);
        return true;
      } catch {
        return false;
      }
    };
    while (!signal.aborted) {
      if (!(await round())) {
        if (!(await pause())) break;
        continue;
      }
      const leading = new AbortController();
      const onAbort = (): void => leading.abort(signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
      const work = lead(leading.signal).catch((err: unknown) =>
        log.error("leader work failed", { error: err }),
      );
      let lastRenew = clock.now();
      while (!leading.signal.aborted) {
        if (!(await pause())) break;
        if (await round()) lastRenew = clock.now();
        else if (clock.now() - lastRenew >= renewDeadlineMs || this.#observedOther()) break;
      }
      leading.abort(new Error("leadership lost"));
      signal.removeEventListener("abort", onAbort);
      await work;
      // Shutting down while leading: hand over at once instead of after expiry.
      if (isAborted(signal))
        await this.release().catch((err: unknown) => log.warn("lease release failed", { error: err }));
      this.#set(false);
    }
  }

  /** Another replica took the lease (we saw a fresh record that is not ours). */
  #observedOther(): boolean {
    return this.#observed !== undefined && !this.#observed.key.startsWith(`${this.#o.identity}|`);
  }

  /** Gives the lease up on shutdown so a standby takes over at once instead of after expiry. */
  async release(): Promise<void> {
    const { client, namespace, name, identity } = this.#o;
    try {
      const lease = await client.get("Lease", name, namespace);
      if (lease.spec.holderIdentity !== identity) return;
      await client.replace(
        "Lease",
        { ...lease, spec: { ...lease.spec, holderIdentity: "", leaseDurationSeconds: 1 } },
        { namespace },
      );
    } catch (err) {
      if (!isNotFound(err) && !isConflict(err)) throw err;
    } finally {
      this.#leader = false;
    }
  }
}
