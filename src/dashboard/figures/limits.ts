// NodePool usage against spec.limits.
import { limitStatus, type LimitStatus } from "../../karpenter/requirements.ts";
import { addInto, parseResources, type Resources } from "../../karpenter/resources.ts";
import type { NodePool } from "../../objects/karpenter.ts";
import type { Machine } from "../machines.ts";

export interface PoolLimits {
  nodePool: string;
  /** Karpenter's own accounting (status.resources) when present, else summed machine capacity. */
  usageSource: "status" | "computed";
  usage: Resources;
  limits: LimitStatus[];
  /** Highest usage/limit ratio (0 without limits). */
  maxRatio: number;
  /** Karpenter will not launch more in this pool. */
  exceeded: boolean;
  problems: string[];
}

export function poolUsageVsLimits(pools: readonly NodePool[], machines: readonly Machine[]): PoolLimits[] {
  const computed = new Map<string, Resources>();
  for (const m of machines) {
    const u = computed.get(m.nodePool) ?? {};
    addInto(u, m.capacity);
    computed.set(m.nodePool, u);
  }
  return poolLimits(pools, computed);
}

/**
 * The same, with each pool's summed machine capacity already known (`computed`, pool → sum of
 * its machines' capacity), e.g. kept by an index instead of summed per call.
 */
export function poolLimits(
  pools: readonly NodePool[],
  computed: ReadonlyMap<string, Readonly<Resources>>,
): PoolLimits[] {
  return pools
    .map((pool) => {
      const name = pool.metadata.name ?? "";
      const problems: string[] = [];
      let usage: Resources | undefined;
      if (pool.status?.resources) {
        try {
          usage = parseResources(pool.status.resources);
        } catch (err) {
          problems.push(`status.resources: ${(err as Error).message}`);
        }
      }
      const usageSource = usage ? "status" : "computed";
      usage ??= { ...(computed.get(name) ?? {}) };
      let limits: LimitStatus[] = [];
      try {
        limits = limitStatus(pool.spec.limits, usage);
      } catch (err) {
        problems.push(`spec.limits: ${(err as Error).message}`);
      }
      const maxRatio = limits.reduce((m, l) => Math.max(m, l.ratio), 0);
      return {
        nodePool: name,
        usageSource,
        usage,
        limits,
        maxRatio,
        exceeded: limits.some((l) => l.exceeded),
        problems,
      } satisfies PoolLimits;
    })
    .sort((a, b) => a.nodePool.localeCompare(b.nodePool));
}
