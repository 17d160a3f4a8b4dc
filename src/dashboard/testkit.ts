// Builders for the plain objects figures and the detector read (tests and the simulator).
import type { Node, Pod } from "../objects/kube.ts";
import type { CapacityType, NodeClaim, NodePool } from "../objects/karpenter.ts";

export interface MachineSpec {
  name: string;
  pool?: string;
  instanceType?: string;
  capacityType?: CapacityType;
  zone?: string;
  cpu?: string;
  memory?: string;
  allocatableCpu?: string;
  allocatableMemory?: string;
  created?: string;
  /** Make only a NodeClaim (not registered yet). */
  unregistered?: boolean;
  ready?: boolean;
  deleting?: string;
}

function labels(s: MachineSpec): Record<string, string> {
  const l: Record<string, string> = {};
  if (s.pool) l["karpenter.sh/nodepool"] = s.pool;
  if (s.instanceType) l["node.kubernetes.io/instance-type"] = s.instanceType;
  if (s.capacityType) l["karpenter.sh/capacity-type"] = s.capacityType;
  if (s.zone) l["topology.kubernetes.io/zone"] = s.zone;
  return l;
}

/** A NodeClaim and (unless unregistered) its Node, both labelled alike. */
export function machineObjects(s: MachineSpec): { nodeClaim?: NodeClaim; node?: Node } {
  const capacity = { cpu: s.cpu ?? "2", memory: s.memory ?? "8Gi", pods: "110" };
  const allocatable = {
    cpu: s.allocatableCpu ?? s.cpu ?? "2",
    memory: s.allocatableMemory ?? s.memory ?? "8Gi",
    pods: "110",
  };
  const meta = {
    labels: labels(s),
    creationTimestamp: s.created ?? "2026-01-01T00:00:00Z",
    ...(s.deleting ? { deletionTimestamp: s.deleting } : {}),
  };
  const nodeClaim: NodeClaim | undefined = s.pool
    ? {
        metadata: { name: `${s.name}-nc`, ...meta },
        spec: {},
        status: {
          capacity,
          allocatable,
          providerID: `aws:///x/${s.name}`,
          ...(s.unregistered ? {} : { nodeName: s.name }),
        },
      }
    : undefined;
  if (s.unregistered) return nodeClaim ? { nodeClaim } : {};
  const node: Node = {
    metadata: { name: s.name, ...meta },
    spec: { providerID: `aws:///x/${s.name}` },
    status: {
      capacity,
      allocatable,
      conditions: [{ type: "Ready", status: s.ready === false ? "False" : "True" }],
    },
  };
  return nodeClaim ? { nodeClaim, node } : { node };
}

export function cluster(specs: MachineSpec[]): { nodes: Node[]; nodeClaims: NodeClaim[] } {
  const nodes: Node[] = [];
  const nodeClaims: NodeClaim[] = [];
  for (const s of specs) {
    const o = machineObjects(s);
    if (o.node) nodes.push(o.node);
    if (o.nodeClaim) nodeClaims.push(o.nodeClaim);
  }
  return { nodes, nodeClaims };
}

export function pod(
  name: string,
  nodeName: string | undefined,
  cpu: string,
  memory: string,
  phase: NonNullable<Pod["status"]>["phase"] = "Running",
): Pod {
  return {
    metadata: { name, namespace: "default" },
    spec: {
      ...(nodeName ? { nodeName } : {}),
      containers: [{ name: "c", resources: { requests: { cpu, memory } } }],
    },
    status: { phase },
  };
}

export function nodePool(
  name: string,
  spec: Partial<NodePool["spec"]> = {},
  status?: NodePool["status"],
): NodePool {
  return {
    metadata: { name },
    spec: { template: { spec: {} }, ...spec },
    ...(status ? { status } : {}),
  };
}

/** Adds one machine (its NodeClaim and, when registered, its Node) to `state`, as informers would. */
export function addMachine(
  state: { apply(kind: "NodeClaim" | "Node", type: "add", obj: NodeClaim | Node): void },
  spec: MachineSpec,
): { nodeClaim?: NodeClaim; node?: Node } {
  const m = machineObjects(spec);
  if (m.nodeClaim) state.apply("NodeClaim", "add", m.nodeClaim);
  if (m.node) state.apply("Node", "add", m.node);
  return m;
}
