// The simulator's EC2 instance catalog: shapes derived from EC2's naming (size → vCPU, family
// category → GiB per vCPU), prices from the pricing module, so simulated costs match what
// Wave shows for the same instance on a real cluster.
import type { PriceProvider } from "../pricing/types.ts";
import {
  ARCH_LABEL,
  CAPACITY_TYPE_LABEL,
  INSTANCE_TYPE_LABEL,
  OS_LABEL,
  TOPOLOGY_REGION_LABEL,
  TOPOLOGY_ZONE_LABEL,
  type CapacityType,
} from "../objects/karpenter.ts";
import { KWOK_ZONES, KwokPriceProvider } from "../pricing/kwok.ts";

export interface InstanceType {
  name: string;
  family: string;
  category: string;
  arch: "amd64" | "arm64";
  vcpu: number;
  memoryBytes: number;
  gpus: number;
  /** Max pods the kubelet allows (EKS ENI limits, simplified). */
  maxPods: number;
  /** Which cloud provider's catalog this type is from (labels and node overhead differ). */
  provider?: "aws" | "kwok";
  /** Fixed kube-reserved overhead; absent = EKS's formula (see the simulator's allocatable). */
  reserved?: { cpuMilli: number; memoryBytes: number };
}

export interface Offering {
  type: InstanceType;
  capacityType: CapacityType;
  zone: string;
  usdPerHour: number;
}

const GiB = 2 ** 30;
const SIZES: Record<string, number> = { large: 2, xlarge: 4, "2xlarge": 8, "4xlarge": 16, "8xlarge": 32 };
const MEMORY_PER_VCPU: Record<string, number> = { c: 2, m: 4, r: 8 };

export const SIM_REGION = "us-east-1";
export const SIM_ZONES = ["us-east-1a", "us-east-1b", "us-east-1c"] as const;

function maxPods(vcpu: number): number {
  return vcpu <= 2 ? 29 : vcpu <= 4 ? 58 : 110;
}

/** General-purpose, compute and memory families (Intel and Graviton) plus g5 GPUs. */
export function buildCatalog(): InstanceType[] {
  const out: InstanceType[] = [];
  for (const family of ["c6i", "c7i", "c7g", "m6i", "m7i", "m7g", "r6i", "r7i", "r7g"]) {
    const category = family[0] ?? "m";
    for (const [size, vcpu] of Object.entries(SIZES)) {
      out.push({
        name: `${family}.${size}`,
        family,
        category,
        arch: family.endsWith("g") ? "arm64" : "amd64",
        vcpu,
        memoryBytes: vcpu * (MEMORY_PER_VCPU[category] ?? 4) * GiB,
        gpus: 0,
        maxPods: maxPods(vcpu),
      });
    }
  }
  for (const [size, vcpu, mem, gpus] of [
    ["xlarge", 4, 16, 1],
    ["2xlarge", 8, 32, 1],
    ["4xlarge", 16, 64, 1],
    ["12xlarge", 48, 192, 4],
  ] as const) {
    out.push({
      name: `g5.${size}`,
      family: "g5",
      category: "g",
      arch: "amd64",
      vcpu,
      memoryBytes: mem * GiB,
      gpus,
      maxPods: maxPods(vcpu),
    });
  }
  return out;
}

// The Karpenter KWOK provider's generated types (kwok/tools/gen_instance_types.go, v1.8.2):
// {c|s|m}-{N}x-{arch}-{os}, 2/4/8 GiB per vCPU, pods = min(16 × vCPU, 1024), kube-reserved
// 100m CPU + 10Mi. Only the linux ones: the rig's NodePools (and Wave's) require linux.
const KWOK_SIZES = [1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256] as const;
const KWOK_MEMORY_PER_VCPU = { c: 2, s: 4, m: 8 } as const;

/** The KWOK provider's instance types, for comparing the simulator with the local rig. */
export function buildKwokCatalog(): InstanceType[] {
  const out: InstanceType[] = [];
  for (const vcpu of KWOK_SIZES) {
    for (const [family, perVcpu] of Object.entries(KWOK_MEMORY_PER_VCPU)) {
      for (const arch of ["amd64", "arm64"] as const) {
        out.push({
          name: `${family}-${vcpu}x-${arch}-linux`,
          family,
          category: family,
          arch,
          vcpu,
          memoryBytes: vcpu * perVcpu * GiB,
          gpus: 0,
          maxPods: Math.min(vcpu * 16, 1024),
          provider: "kwok",
          reserved: { cpuMilli: 100, memoryBytes: 10 * 2 ** 20 },
        });
      }
    }
  }
  return out;
}

/** KWOK offerings: every type in test-zone-a..d, spot and on-demand, at the provider's prices. */
export function buildKwokOfferings(
  catalog: readonly InstanceType[] = buildKwokCatalog(),
  prices: PriceProvider = new KwokPriceProvider(),
): Offering[] {
  return buildOfferings(catalog, prices, KWOK_ZONES);
}

/** Which catalog a simulation runs on: EC2-like (the embedded default) or the rig's KWOK types. */
export type CatalogName = "aws" | "kwok";

/** Every (type, capacity type, zone) the pricing module can price; unpriced ones are dropped. */
export function buildOfferings(
  catalog: readonly InstanceType[],
  prices: PriceProvider,
  zones: readonly string[] = SIM_ZONES,
): Offering[] {
  const out: Offering[] = [];
  for (const type of catalog) {
    for (const zone of zones) {
      for (const capacityType of ["on-demand", "spot"] as const) {
        const quote = prices.price(type.name, capacityType, zone, SIM_REGION);
        if (quote) out.push({ type, capacityType, zone, usdPerHour: quote.usdPerHour });
      }
    }
  }
  return out;
}

const labelsCache = new WeakMap<Offering, Readonly<Record<string, string>>>();

/**
 * The labels Karpenter's cloud provider (AWS or KWOK) puts on a node of this offering; made once
 * per offering (the provisioner asks for every offering per pending pod).
 */
export function offeringLabels(o: Offering): Readonly<Record<string, string>> {
  let labels = labelsCache.get(o);
  if (labels === undefined) {
    labels = Object.freeze(labelsOf(o));
    labelsCache.set(o, labels);
  }
  return labels;
}

function labelsOf(o: Offering): Record<string, string> {
  if (o.type.provider === "kwok") {
    return {
      [INSTANCE_TYPE_LABEL]: o.type.name,
      [CAPACITY_TYPE_LABEL]: o.capacityType,
      [TOPOLOGY_ZONE_LABEL]: o.zone,
      [ARCH_LABEL]: o.type.arch,
      [OS_LABEL]: "linux",
      "karpenter.kwok.sh/instance-family": o.type.family,
      "karpenter.kwok.sh/instance-size": String(o.type.vcpu),
      "karpenter.kwok.sh/instance-cpu": String(o.type.vcpu),
      "karpenter.kwok.sh/instance-memory": `${o.type.memoryBytes / GiB}Gi`,
    };
  }
  return {
    [INSTANCE_TYPE_LABEL]: o.type.name,
    [CAPACITY_TYPE_LABEL]: o.capacityType,
    [TOPOLOGY_ZONE_LABEL]: o.zone,
    [TOPOLOGY_REGION_LABEL]: SIM_REGION,
    [ARCH_LABEL]: o.type.arch,
    [OS_LABEL]: "linux",
    "karpenter.k8s.aws/instance-family": o.type.family,
    "karpenter.k8s.aws/instance-category": o.type.category,
    "karpenter.k8s.aws/instance-cpu": String(o.type.vcpu),
    "karpenter.k8s.aws/instance-memory": String(o.type.memoryBytes / 2 ** 20),
    ...(o.type.gpus ? { "karpenter.k8s.aws/instance-gpu-count": String(o.type.gpus) } : {}),
  };
}
