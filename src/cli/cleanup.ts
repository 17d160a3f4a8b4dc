// `wave cleanup`: removes what Wave wrote into the cluster at run time (the Helm chart's
// post-delete hook; docs/install-eks.md, "Uninstall").
import type { Lease, Pod } from "../objects/kube.ts";
import { isConflict, isNotFound, type KubeClient } from "../kube/port.ts";
import { DO_NOT_DISRUPT_ANNOTATION } from "../objects/karpenter.ts";
import { realClock, type Clock } from "../shared/clock.ts";
import { createLogger, type Logger } from "../shared/log.ts";
import {
  CREATED_AT_ANNOTATION,
  DEADLINE_ANNOTATION,
  DO_NOT_DISRUPT_NAMESPACE_ANNOTATION,
  DO_NOT_DISRUPT_OWNER_ANNOTATION,
  DO_NOT_DISRUPT_OWNER_VALUE,
  LAST_WARMUP_AT_ANNOTATION,
  LAST_WARMUP_NAMESPACE_ANNOTATION,
  LEDGER_LABEL,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  PREPULLED_ANNOTATION,
  PREPULL_LABEL,
  WARMUP_LABEL,
} from "../objects/wave.ts";
import type { CommandContext } from "./types.ts";
import { cluster, logger, SPOT_REPAIR_LEASE, WARMUP_LEASE, type ComponentOptions } from "./component.ts";

export interface CleanupOptions {
  namespace: string;
  /** Where warmup and pull pods live (default: namespace). */
  warmupNamespace?: string;
  /**
   * Where the webhook keeps its spot slot ledgers and the `wave-spot-repair` Lease, when not in
   * `namespace` (the chart's own ledger namespace goes with the release; one it did not create
   * is emptied here). Ledgers in `namespace` (installs before the ledger namespace) go too.
   */
  ledgerNamespace?: string;
  /** Label selector of pods (in `namespace`) that must be gone first: core's. */
  waitForPods?: string;
  /** The agent's leader Lease name. */
  agentLease?: string;
  clock?: Clock;
  log?: Logger;
  signal?: AbortSignal;
  pollMs?: number;
}

export interface CleanupReport {
  pods: string[];
  nodes: string[];
  nodeClaims: string[];
  nodePools: string[];
  leases: string[];
  /** One line per object that could not be cleaned (the run then exits non-zero). */
  errors: string[];
}

const CONFLICT_RETRIES = 5;

async function listAll(kube: KubeClient, kind: "Node" | "NodeClaim" | "NodePool"): Promise<Annotated[]> {
  const out: Annotated[] = [];
  let cont: string | undefined;
  do {
    const page = await kube.list(kind, cont === undefined ? { limit: 500 } : { limit: 500, continue: cont });
    out.push(...page.items);
    cont = page.continue;
  } while (cont !== undefined && cont !== "");
  return out;
}

type Annotated = {
  metadata: { name?: string; resourceVersion?: string; annotations?: Record<string, string> };
};

/**
 * Merge-patches away the annotations `remove` picks from the current ones, with a
 * resourceVersion precondition; on conflict re-reads and recomputes. False when nothing to do.
 */
async function stripAnnotations(
  kube: KubeClient,
  kind: "Node" | "NodeClaim" | "NodePool",
  obj: Annotated,
  remove: (a: Record<string, string>) => string[],
): Promise<boolean> {
  const name = obj.metadata.name ?? "";
  let cur = obj;
  for (let attempt = 0; ; attempt++) {
    const keys = remove(cur.metadata.annotations ?? {});
    if (keys.length === 0) return false;
    try {
      await kube.patch(kind, name, {
        metadata: {
          resourceVersion: cur.metadata.resourceVersion,
          annotations: Object.fromEntries(keys.map((k) => [k, null])),
        },
      });
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      if (!isConflict(err) || attempt >= CONFLICT_RETRIES) throw err;
      try {
        cur = await kube.get(kind, name);
      } catch (e) {
        if (isNotFound(e)) return false;
        throw e;
      }
    }
  }
}

/**
 * Wave's warm-node marks, only where this install owns the do-not-disrupt: a user's stays, and so
 * does another Wave install's (its owner namespace differs; a mark without one predates it).
 */
export function waveProtection(
  kind: "Node" | "NodeClaim",
  namespace: string,
): (a: Record<string, string>) => string[] {
  return (a) => {
    if (a[DO_NOT_DISRUPT_OWNER_ANNOTATION] !== DO_NOT_DISRUPT_OWNER_VALUE) return [];
    const owner = a[DO_NOT_DISRUPT_NAMESPACE_ANNOTATION];
    if (owner !== undefined && owner !== namespace) return [];
    const keys: string[] = [
      DO_NOT_DISRUPT_ANNOTATION,
      DO_NOT_DISRUPT_OWNER_ANNOTATION,
      DO_NOT_DISRUPT_NAMESPACE_ANNOTATION,
      DEADLINE_ANNOTATION,
      CREATED_AT_ANNOTATION,
    ];
    if (kind === "Node") keys.push(PREPULLED_ANNOTATION); // removed with Wave's do-not-disrupt
    return keys.filter((k) => k in a);
  };
}

/** The NodePool's warmup cooldown mark, unless another Wave install (namespace) wrote it last. */
export function cooldownMark(namespace: string): (a: Record<string, string>) => string[] {
  return (a) => {
    const owner = a[LAST_WARMUP_NAMESPACE_ANNOTATION];
    if (owner !== undefined && owner !== namespace) return [];
    return [LAST_WARMUP_AT_ANNOTATION, LAST_WARMUP_NAMESPACE_ANNOTATION].filter((k) => k in a);
  };
}

/** Removes what Wave wrote into the cluster at run time (docs/install-eks.md, "Uninstall"). */
export async function cleanup(kube: KubeClient, o: CleanupOptions): Promise<CleanupReport> {
  const clock = o.clock ?? realClock;
  const log = o.log ?? createLogger({ base: { app: "wave", component: "cleanup" } });
  const ns = o.namespace;
  // Warmup and pull pods live in the warmup namespace; Wave's marks name `namespace` as owner.
  const podNs = o.warmupNamespace ?? ns;
  const report: CleanupReport = {
    pods: [],
    nodes: [],
    nodeClaims: [],
    nodePools: [],
    leases: [],
    errors: [],
  };
  const attempt = async (what: string, fn: () => Promise<void>): Promise<void> => {
    try {
      await fn();
    } catch (err) {
      report.errors.push(`${what}: ${(err as Error).message}`);
      log.error("cleanup step failed", { what, err });
    }
  };

  // 1. Core must be gone, or it could start a warmup behind our back.
  if (o.waitForPods !== undefined) {
    const selector = o.waitForPods;
    for (;;) {
      const left = (await kube.list("Pod", { namespace: ns, labelSelector: selector })).items;
      if (left.length === 0) break;
      log.info("waiting for pods to be gone", { selector, left: left.map((p) => p.metadata.name) });
      await clock.sleep(o.pollMs ?? 2000, o.signal);
    }
  }

  // 2. Warmup and pull pods.
  const pods: Pod[] = [];
  await attempt("list warmup and pull pods", async () => {
    for (const label of [WARMUP_LABEL, PREPULL_LABEL])
      pods.push(...(await kube.list("Pod", { namespace: podNs, labelSelector: `${label}=true` })).items);
  });
  for (const p of pods) {
    const name = p.metadata.name ?? "";
    await attempt(`pod ${podNs}/${name}`, async () => {
      try {
        await kube.delete("Pod", name, {
          namespace: podNs,
          gracePeriodSeconds: 0,
          ...(p.metadata.uid === undefined ? {} : { uid: p.metadata.uid }),
        });
        report.pods.push(name);
      } catch (err) {
        // Gone already, or a different pod now holds the name: either way ours is done.
        if (!isNotFound(err) && !isConflict(err)) throw err;
      }
    });
  }

  // 3. Warm nodes: Wave-owned do-not-disrupt on Nodes and NodeClaims.
  for (const [kind, into] of [
    ["Node", report.nodes],
    ["NodeClaim", report.nodeClaims],
  ] as const) {
    let objs: Annotated[] = [];
    await attempt(`list ${kind}s`, async () => {
      objs = await listAll(kube, kind);
    });
    for (const obj of objs) {
      const name = obj.metadata.name ?? "";
      await attempt(`${kind} ${name}`, async () => {
        if (await stripAnnotations(kube, kind, obj, waveProtection(kind, ns))) into.push(name);
      });
    }
  }

  // 4. NodePools: the warmup cooldown mark.
  let pools: Annotated[] = [];
  await attempt("list NodePools", async () => {
    pools = await listAll(kube, "NodePool");
  });
  for (const pool of pools) {
    const name = pool.metadata.name ?? "";
    await attempt(`NodePool ${name}`, async () => {
      if (await stripAnnotations(kube, "NodePool", pool, cooldownMark(ns))) report.nodePools.push(name);
    });
  }

  // 5. Leases: leader elections and spot slot ledgers, in Wave's namespace and the ledgers' own.
  const agentLease = o.agentLease ?? "wave-agent";
  const ledgerNs = o.ledgerNamespace ?? ns;
  const places = new Map<string, Set<string>>([[ns, new Set([WARMUP_LEASE, SPOT_REPAIR_LEASE, agentLease])]]);
  if (ledgerNs !== ns) places.set(ledgerNs, new Set([SPOT_REPAIR_LEASE]));
  for (const [where, leaders] of places) {
    let leases: Lease[] = [];
    await attempt(`list Leases in ${where}`, async () => {
      leases = (await kube.list("Lease", { namespace: where })).items;
    });
    for (const l of leases) {
      const name = l.metadata.name ?? "";
      const labels = l.metadata.labels ?? {};
      const ledger = labels[MANAGED_BY_LABEL] === MANAGED_BY_VALUE && labels[LEDGER_LABEL] !== undefined;
      if (!leaders.has(name) && !ledger) continue;
      await attempt(`Lease ${where}/${name}`, async () => {
        try {
          await kube.delete("Lease", name, {
            namespace: where,
            ...(l.metadata.uid === undefined ? {} : { uid: l.metadata.uid }),
          });
          report.leases.push(where === ns ? name : `${where}/${name}`);
        } catch (err) {
          if (!isNotFound(err) && !isConflict(err)) throw err;
        }
      });
    }
  }
  return report;
}

export async function cleanupCommand(ctx: CommandContext, opts: ComponentOptions = {}): Promise<number> {
  const log = logger(ctx.config, "cleanup", opts);
  const { kube } = await cluster(ctx.config, ctx.io.env, log, opts);
  const where = "target" in kube && typeof kube.target === "string" ? ` of ${kube.target}` : "";
  if (where !== "") ctx.io.err(`wave cleanup: removing Wave's objects${where}\n`);
  const wait = ctx.flags["wait-for-pods"];
  const report = await cleanup(kube, {
    namespace: ctx.config.namespace,
    ...(ctx.config.warmupNamespace ? { warmupNamespace: ctx.config.warmupNamespace } : {}),
    ...(ctx.config.spotLedgerNamespace ? { ledgerNamespace: ctx.config.spotLedgerNamespace } : {}),
    agentLease: ctx.config.agentLease,
    ...(typeof wait === "string" ? { waitForPods: wait } : {}),
    ...(opts.clock ? { clock: opts.clock } : {}),
    log,
    signal: ctx.io.signal,
  });
  const counts = (["pods", "nodes", "nodeClaims", "nodePools", "leases"] as const)
    .map((k) => `${report[k].length} ${k}`)
    .join(", ");
  ctx.io.out(`cleaned up in namespace ${ctx.config.namespace}${where}: ${counts}\n`);
  for (const e of report.errors) ctx.io.err(`wave cleanup: ${e}\n`);
  return report.errors.length === 0 ? 0 : 1;
}
