// The e2e files' NodePools: copies of the rig's NodePool `default` (so they follow whatever the
// rig's Karpenter release and KWOK node class need) with a label and a NoSchedule taint of their
// own, so only the test's pods land on their nodes and other tests never see them.
import assert from "node:assert/strict";
import { apply, get } from "./harness.ts";
import { CAPACITY_TYPE_LABEL } from "../../src/objects/karpenter.ts";

export const POOL_LABEL = "wave.dev/e2e-pool";

/** Nodes of 4 vCPUs only (KWOK's instance types): a 3-CPU pod fills one, whatever the prices. */
export const FOUR_VCPU: Requirement & { operator: "In" } = {
  key: "karpenter.kwok.sh/instance-cpu",
  operator: "In",
  values: ["4"],
};

interface Requirement {
  key: string;
  operator: string;
  values?: string[];
}

export interface TaintedPoolOptions {
  /** The label key (value: the pool's name) its nodes carry and its taint uses. */
  label?: string;
  /** Replaces the default pool's capacity-type requirement. */
  capacityTypes?: string[];
  /** Added to the default pool's requirements. */
  requirements?: Requirement[];
  /** Merged over the default pool's disruption block. */
  disruption?: Record<string, unknown>;
  limits?: Record<string, string>;
  /** A KWOKNodeClass of this name instead of the default's node class. */
  nodeClass?: string;
  /** A static pool (StaticCapacity): Karpenter keeps this many nodes (limits may then name only nodes). */
  replicas?: number;
}

/** Applies a copy of the rig's NodePool `default` named `name`, tainted and labelled with it. */
export async function applyTaintedPool(name: string, opts: TaintedPoolOptions = {}): Promise<void> {
  const def = await get("nodepools.karpenter.sh", "default");
  assert.ok(def, "the rig's NodePool default exists");
  const spec = def.spec ?? {};
  const tmpl = (spec["template"] ?? {}) as { spec?: { requirements?: Requirement[] } };
  const label = opts.label ?? POOL_LABEL;
  let requirements = tmpl.spec?.requirements ?? [];
  if (opts.capacityTypes)
    requirements = [
      ...requirements.filter((r) => r.key !== CAPACITY_TYPE_LABEL),
      { key: CAPACITY_TYPE_LABEL, operator: "In", values: opts.capacityTypes },
    ];
  requirements = [...requirements, ...(opts.requirements ?? [])];
  await apply({
    apiVersion: "karpenter.sh/v1",
    kind: "NodePool",
    metadata: { name },
    spec: {
      ...spec,
      ...(opts.disruption ? { disruption: { ...(spec["disruption"] as object), ...opts.disruption } } : {}),
      ...(opts.limits ? { limits: opts.limits } : {}),
      ...(opts.replicas !== undefined ? { replicas: opts.replicas } : {}),
      template: {
        metadata: { labels: { [label]: name } },
        spec: {
          ...tmpl.spec,
          requirements,
          ...(opts.nodeClass
            ? { nodeClassRef: { group: "karpenter.kwok.sh", kind: "KWOKNodeClass", name: opts.nodeClass } }
            : {}),
          taints: [{ key: label, value: name, effect: "NoSchedule" }],
        },
      },
    },
  });
}

/** KWOK's on-demand price by hand (kwok/tools/gen_instance_types.go): what Karpenter's KWOK provider lists. */
export function kwokOnDemand(instanceType: string): number {
  const m = /^([csm])-(\d+)x-/.exec(instanceType);
  assert.ok(m?.[1] && m[2], instanceType);
  const vcpu = Number(m[2]);
  return 0.025 * vcpu + (0.001 * vcpu * { c: 2, s: 4, m: 8 }[m[1] as "c" | "s" | "m"] * 2 ** 30) / 1e9;
}
