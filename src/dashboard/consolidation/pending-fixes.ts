// Per reason a pending pod waits, the fix (a merge patch on the object to change, or an
// instruction when the change is a choice Wave cannot make) and what it would cost: the node the
// pool would launch for the pod — the cheapest machine of that pool the cluster runs that holds
// the pod's requests, at the prices the rest of Wave uses (plan.ts catalogOf, machinePrice).
import type { BlockerFixDto, ObjectRefDto } from "../dto.ts";
import type { NodeSelectorRequirement, Pod, Toleration } from "../../objects/kube.ts";
import { NODE_POOL_LABEL, type NodePool } from "../../objects/karpenter.ts";
import type { PendingReason } from "../../karpenter/events/parse.ts";
import { podNodeRequirements } from "../../karpenter/pool-of-pod.ts";
import { CPU, MEMORY, parseResources, podRequests, type Resources } from "../../karpenter/resources.ts";
import { resolveWorkload } from "../../webhook/workload.ts";
import { kubectlMergePatch } from "./fixes.ts";
import { offers, type Catalog } from "./plan.ts";

const GI = 2 ** 30;
/** Labels a pod may ask for that say nothing about the instance type (not a cause of "no type"). */
const NOT_INSTANCE = new Set([NODE_POOL_LABEL, "kubernetes.io/hostname"]);

const reqText = (r: NodeSelectorRequirement): string =>
  `${r.key} ${r.operator}${r.values?.length ? ` [${r.values.join(" ")}]` : ""}`;

/**
 * When Karpenter found no instance type for a pod in a pool, whether one of the pod's own
 * requirements is what rules them all out (rather than its size): Karpenter says so ("no instance
 * type met all requirements"), or says requirements and resources together while the pod asks for
 * an instance property the pool does not pin. The pool's own requirements alone never rule out
 * every type (the pool launches nodes), so the pod's requirement is the one to name.
 */
export function resourcesCause(
  detail: string,
  pod: Pod,
  pool: NodePool | undefined,
): { key: string; requirement: string } | undefined {
  const onlyRequirements = /met all requirements/i.test(detail);
  const either = /met the scheduling requirements/i.test(detail);
  if (!onlyRequirements && !either) return undefined;
  const poolKeys = new Map((pool?.spec.template.spec.requirements ?? []).map((r) => [r.key, r] as const));
  const labels = pool?.spec.template.metadata?.labels ?? {};
  const own = podNodeRequirements(pod).filter((r) => !NOT_INSTANCE.has(r.key) && !(r.key in labels));
  // A requirement the pool also has (with other values) narrows it first; else any of the pod's.
  const r = own.find((x) => poolKeys.has(x.key)) ?? own[0];
  if (!r) return undefined;
  const same = poolKeys.get(r.key);
  return { key: r.key, requirement: `${reqText(r)}${same ? ` (the pool: ${reqText(same)})` : ""}` };
}

/** The cheapest machine of the pool that holds the pod: the node a fix would have Karpenter launch. */
function nodeFor(pod: Pod, pool: string | null, catalog: readonly Catalog[]): Catalog | undefined {
  if (!pool) return undefined;
  return catalog.find((k) => k.pool === pool && offers(k, podRequests(pod)));
}

/** The toleration a taint "key=value:Effect" (or "key:Effect") asks for. */
function tolerationFor(taint: string): Toleration | undefined {
  const m = /^([^=:]+)(?:=([^:]*))?:(\w+)$/.exec(taint.trim());
  if (!m?.[1] || !m[3]) return undefined;
  return m[2]
    ? { key: m[1], operator: "Equal", value: m[2], effect: m[3] as Toleration["effect"] }
    : { key: m[1], operator: "Exists", effect: m[3] as Toleration["effect"] };
}

/** The pod's workload (its Deployment or StatefulSet), the object whose template a pod fix changes. */
function workloadOf(pod: Pod): { kind: string; namespace: string; name: string } | undefined {
  const r = resolveWorkload(pod, pod.metadata.namespace ?? "default");
  return r.managed ? r.candidates[0] : undefined;
}

/** A limit raised by one node: what the pool uses now plus the machine the pod needs. */
function raisedLimits(
  pool: NodePool,
  node: Catalog | undefined,
  pod: Pod,
  usage: Resources | undefined,
): Record<string, string> {
  const limits = parseResources(pool.spec.limits);
  const status = parseResources(pool.status?.resources);
  const used = Object.keys(status).length > 0 ? status : (usage ?? {});
  const req = podRequests(pod);
  const out: Record<string, string> = {};
  for (const [k, limit] of Object.entries(limits)) {
    const add =
      k === CPU ? (node?.cpu ?? req[k] ?? 0) : k === MEMORY ? (node?.memory ?? req[k] ?? 0) : (req[k] ?? 0);
    const want = (used[k] ?? 0) + add;
    if (want <= limit) continue;
    out[k] =
      k === CPU
        ? String(Math.ceil(want / 1000))
        : k === MEMORY
          ? `${Math.ceil(want / GI)}Gi`
          : String(Math.ceil(want));
  }
  return out;
}

export interface PendingFix {
  /** A line naming what rules the types out, when Wave could tell (else the reason's own line). */
  text?: string;
  fix: BlockerFixDto | null;
  costPerHour: number | null;
}

/** What a reason's fix is built from. */
interface Ctx {
  r: PendingReason;
  pod: Pod;
  pool: NodePool | undefined;
  node: Catalog | undefined;
  cost: number | null;
  poolName: string;
  usage: Resources | undefined;
  make: (
    title: string,
    detail: string,
    patch: Record<string, unknown> | null,
    target?: ObjectRefDto,
  ) => BlockerFixDto;
}

function taintFix({ r, pod, cost, poolName, make }: Ctx): PendingFix {
  const t = r.key ? tolerationFor(r.key) : undefined;
  const w = workloadOf(pod);
  if (!t || !w)
    return {
      fix: make(
        `Tolerate ${r.key ?? "the taint"}`,
        `Add a toleration for ${r.key ?? "the pool's taint"} to the pod's workload, if it belongs on ${poolName}.`,
        null,
      ),
      costPerHour: cost,
    };
  // Admission adds the not-ready/unreachable ones to every pod: the template does not carry them.
  const kept = (pod.spec.tolerations ?? []).filter(
    (x) => !/^node\.kubernetes\.io\/(not-ready|unreachable)$/.test(x.key ?? ""),
  );
  return {
    fix: make(
      `Let ${w.kind} ${w.name} tolerate ${r.key ?? ""}`,
      `If the pod belongs on ${poolName}: its nodes carry this taint to keep other pods off.`,
      { spec: { template: { spec: { tolerations: [...kept, t] } } } },
      w,
    ),
    costPerHour: cost,
  };
}

function requirementFix({ r, pod, pool, cost, poolName, make }: Ctx): PendingFix {
  const mine = podNodeRequirements(pod).find((x) => x.key === r.key);
  const cause = /no instance type/i.test(r.detail) ? resourcesCause(r.detail, pod, pool) : undefined;
  if (cause)
    return {
      text: `${r.nodePool ? `NodePool ${r.nodePool}` : "A NodePool"}: no instance type meets the pod's requirement ${cause.requirement}`,
      fix: make(
        "Relax the pod's requirement",
        `No instance type ${poolName} may launch meets ${cause.requirement}: relax it in the pod's workload, or allow instance types that meet it in ${poolName}'s requirements.`,
        null,
      ),
      costPerHour: null,
    };
  const reqs = pool?.spec.template.spec.requirements ?? [];
  const own = reqs.find((x) => x.key === r.key && x.operator === "In");
  const wanted = mine?.operator === "In" ? (mine.values ?? []) : [];
  const label = r.key ? pool?.spec.template.metadata?.labels?.[r.key] : undefined;
  if (!pool || !r.key || wanted.length === 0 || label !== undefined)
    return {
      fix: make(
        `Match the pod's ${r.key ?? "requirement"} to a pool`,
        `The pod asks for ${mine ? reqText(mine) : "a label value"} that ${poolName} does not offer: change the pod's node selector or affinity, or add a pool that offers it.`,
        null,
      ),
      costPerHour: cost,
    };
  const next = own
    ? reqs.map((x) => (x === own ? { ...x, values: [...new Set([...(x.values ?? []), ...wanted])] } : x))
    : [...reqs, { key: r.key, operator: "In" as const, values: wanted }];
  return {
    fix: make(
      `Allow ${r.key} ${wanted.join(", ")} in NodePool ${pool.metadata.name ?? ""}`,
      `Or, if the pod should not run there, change its ${reqText(mine ?? { key: r.key, operator: "In" })}.`,
      { spec: { template: { spec: { requirements: next } } } },
    ),
    costPerHour: cost,
  };
}

function limitFix({ pod, pool, node, cost, poolName, usage, make }: Ctx): PendingFix {
  const raised = pool ? raisedLimits(pool, node, pod, usage) : {};
  if (!pool || Object.keys(raised).length === 0)
    return {
      fix: make(
        "Raise the NodePool's limits",
        `${poolName} is at its spec.limits: raise them, or free capacity in it.`,
        null,
      ),
      costPerHour: cost,
    };
  return {
    fix: make(
      `Raise NodePool ${pool.metadata.name ?? ""}'s limits by one node`,
      "What the pool runs now plus the node this pod needs.",
      { spec: { limits: raised } },
    ),
    costPerHour: cost,
  };
}

function sizeFix({ r, pod, poolName, make }: Ctx): PendingFix {
  const req = podRequests(pod);
  const size = `cpu ${((req[CPU] ?? 0) / 1000).toString()}, memory ${((req[MEMORY] ?? 0) / GI).toFixed(1)} GiB`;
  return {
    text: `${r.nodePool ? `NodePool ${r.nodePool}` : "A NodePool"}: no instance type has room for the pod (${size}, with the DaemonSets)`,
    fix: make(
      "Lower the pod's requests or allow larger instance types",
      `The pod asks ${size}: no instance type ${poolName} may launch holds it with its DaemonSets.`,
      null,
    ),
    costPerHour: null,
  };
}

/** The fix for one reason a pod waits, and the hourly price of the node it would launch. */
export function pendingFix(
  r: PendingReason,
  pod: Pod,
  pool: NodePool | undefined,
  catalog: readonly Catalog[],
  usage?: Resources,
): PendingFix {
  const node = nodeFor(pod, r.nodePool, catalog);
  const poolRef: ObjectRefDto = { kind: "NodePool", namespace: null, name: r.nodePool ?? "" };
  const c: Ctx = {
    r,
    pod,
    pool,
    node,
    cost: node?.usdPerHour ?? null,
    poolName: r.nodePool ?? "a NodePool",
    usage,
    make: (title, detail, patch, target = poolRef) => ({
      title,
      detail,
      target,
      patch,
      kubectl: patch ? kubectlMergePatch(target, patch) : null,
    }),
  };
  switch (r.kind) {
    case "taint":
      return taintFix(c);
    case "requirement":
      return requirementFix(c);
    case "limit":
      return limitFix(c);
    case "resources":
      return sizeFix(c);
    case "no-nodepool":
      return {
        fix: c.make(
          "Create a NodePool",
          "No NodePool exists or is ready: Karpenter launches nodes only for a NodePool.",
          null,
        ),
        costPerHour: null,
      };
    case "other":
      return { fix: null, costPerHour: null };
  }
}
