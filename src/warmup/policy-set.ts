// The warmup policies of the controller that runs beside a cluster's agent (ADR 0014): the
// WarmupPolicy resources of the cluster once the agent's informer has listed them (issue 31), and
// until then — or on a cluster without the CRD — the set core last sent over the agent stream.
// Either way remembered in a ConfigMap, so an agent that restarts (or a standby that takes the
// Lease) while the apiserver or core is away still acts on the last known good set.
import type { KubeClient } from "../kube/port.ts";
import { isConflict, isNotFound } from "../kube/port.ts";
import type { Logger } from "../shared/log.ts";
import type { WarmupPolicyResource } from "../objects/policy-crds.ts";
import { parsePolicy } from "../policy/validate-warmup.ts";
import { DEFAULT_POLICY, type WarmupPolicy } from "../policy/warmup.ts";
import { warmupPoliciesFromResources } from "../policy/in-force.ts";

/** Where the last set is remembered between processes. */
export interface PolicyMemory {
  /** The remembered set, or undefined if there is none. */
  load(): Promise<Record<string, unknown> | undefined>;
  save(policies: Record<string, WarmupPolicy>): Promise<void>;
}

/** The ConfigMap's key that holds the set as JSON ({ pool: policy }). */
export const POLICY_MEMORY_KEY = "policies.json";

/**
 * A ConfigMap in Wave's namespace (the chart creates it empty, so the agent needs only get and
 * update on that one name; outside the chart it is created on first save).
 */
export class ConfigMapPolicyMemory implements PolicyMemory {
  readonly #kube: KubeClient;
  readonly #namespace: string;
  readonly #name: string;

  constructor(kube: KubeClient, namespace: string, name: string) {
    this.#kube = kube;
    this.#namespace = namespace;
    this.#name = name;
  }

  async load(): Promise<Record<string, unknown> | undefined> {
    let text: string | undefined;
    try {
      text = (await this.#kube.get("ConfigMap", this.#name, this.#namespace)).data?.[POLICY_MEMORY_KEY];
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
    if (text === undefined) return undefined;
    const parsed = JSON.parse(text) as unknown;
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
      throw new Error(`ConfigMap ${this.#namespace}/${this.#name}: ${POLICY_MEMORY_KEY} is not an object`);
    return parsed as Record<string, unknown>;
  }

  async save(policies: Record<string, WarmupPolicy>): Promise<void> {
    const data = { [POLICY_MEMORY_KEY]: JSON.stringify(policies) };
    for (let attempt = 0; ; attempt++) {
      try {
        const cm = await this.#kube.get("ConfigMap", this.#name, this.#namespace);
        await this.#kube.replace("ConfigMap", { ...cm, data: { ...cm.data, ...data } });
        return;
      } catch (err) {
        if (isNotFound(err)) {
          await this.#kube.create("ConfigMap", {
            metadata: { name: this.#name, namespace: this.#namespace },
            data,
          });
          return;
        }
        // Another writer (a previous leader) updated it between our get and replace: once more.
        if (!isConflict(err) || attempt >= 2) throw err;
      }
    }
  }
}

/** In the process's memory only: `wave start`, where core never goes away without it. */
export class VolatilePolicyMemory implements PolicyMemory {
  saved: Record<string, WarmupPolicy> | undefined;
  load(): Promise<Record<string, unknown> | undefined> {
    return Promise.resolve(this.saved);
  }
  save(policies: Record<string, WarmupPolicy>): Promise<void> {
    this.saved = { ...policies };
    return Promise.resolve();
  }
}

export class PolicySet {
  readonly #memory: PolicyMemory;
  readonly #log: Logger;
  #policies = new Map<string, WarmupPolicy>();
  #saving: Promise<void> = Promise.resolve();
  /** The WarmupPolicy resources decide (their informer listed them): core's set is ignored. */
  #fromResources = false;

  constructor(o: { memory: PolicyMemory; log: Logger }) {
    this.#memory = o.memory;
    this.#log = o.log;
  }

  /** The pool's policy (the default, disabled, for a pool without one). */
  readonly get = (pool: string): WarmupPolicy => this.#policies.get(pool) ?? DEFAULT_POLICY;

  /** The pools with a policy. */
  pools(): string[] {
    return [...this.#policies.keys()];
  }

  /**
   * Takes the remembered set, unless core's arrived first. A memory that cannot be read leaves
   * the defaults (warmup off) and says so: acting on a guess would be worse.
   */
  async restore(): Promise<void> {
    try {
      const saved = await this.#memory.load();
      if (saved === undefined || this.#policies.size > 0 || this.#fromResources) return;
      this.#policies = this.#parse(Object.entries(saved).map(([pool, value]) => ({ pool, value })));
      this.#log.info("warmup policies restored from the last set core sent", { pools: this.pools() });
    } catch (err) {
      this.#log.warn(
        "the remembered warmup policies could not be read; warmup stays off until core sends them",
        {
          err,
        },
      );
    }
  }

  /**
   * Core's complete set replaces ours; returns the pools whose policy changed (to reconcile now).
   * Remembered when it changed; saves never overlap and a failed one is logged, not fatal.
   */
  replace(next: readonly { pool: string; value: unknown }[]): string[] {
    if (this.#fromResources) {
      this.#log.debug("core's warmup policies ignored: the WarmupPolicy resources decide");
      return [];
    }
    return this.#install(this.#parse(next));
  }

  /**
   * The cluster's WarmupPolicy resources, complete (from the agent's state): from now on they
   * decide. An invalid one keeps its pool's last valid policy. Returns the pools that changed.
   */
  fromResources(crs: readonly WarmupPolicyResource[]): string[] {
    this.#fromResources = true;
    const { policies, problems } = warmupPoliciesFromResources(crs, this.#policies);
    for (const p of problems) this.#log.warn("WarmupPolicy not applied as written", p);
    return this.#install(policies);
  }

  /** Whether the WarmupPolicy resources decide (else core's set, or the remembered one). */
  get resourcesDecide(): boolean {
    return this.#fromResources;
  }

  #install(parsed: Map<string, WarmupPolicy>): string[] {
    const changed = [...new Set([...parsed.keys(), ...this.#policies.keys()])].filter(
      (pool) => JSON.stringify(parsed.get(pool)) !== JSON.stringify(this.#policies.get(pool)),
    );
    this.#policies = parsed;
    if (changed.length > 0) {
      const snapshot = Object.fromEntries(parsed);
      this.#saving = this.#saving
        .then(() => this.#memory.save(snapshot))
        .catch((err: unknown) => this.#log.warn("remembering the warmup policies failed", { err }));
    }
    return changed;
  }

  /** Resolves when the last change is remembered (tests, shutdown). */
  saved(): Promise<void> {
    return this.#saving;
  }

  #parse(entries: readonly { pool: string; value: unknown }[]): Map<string, WarmupPolicy> {
    const out = new Map<string, WarmupPolicy>();
    for (const { pool, value } of entries) {
      const r = parsePolicy(value);
      if (r.ok) out.set(pool, r.policy);
      else this.#log.warn("invalid warmup policy left out", { pool, errors: r.errors });
    }
    return out;
  }
}
