// What the lifecycle and adoption tests both run: a webhook replica's pod watch and slot
// allocator over an in-memory apiserver, and policy sources holding fixed sets.
import type { MemoryKube } from "../kube/memory/memory.ts";
import type { SpotPolicy, Strategy, WorkloadKind } from "../policy/spot.ts";
import type { FakeClock } from "../shared/clock.ts";
import { SlotAllocator } from "./allocator.ts";
import { BackingVerifier, SourceLimiter } from "./backing.ts";
import { PodCache } from "./pod-cache.ts";
import { InMemoryPolicySource } from "./policy-source.ts";

/** An in-memory policy source holding `policies`. */
export const policySource = (...policies: SpotPolicy[]): InMemoryPolicySource =>
  new InMemoryPolicySource({ apiVersion: "wave.sh/v1alpha1", kind: "SpotPolicySet", policies });

/** A replica's slot allocator over `kube`, its ledgers in namespace "wave", tokens tok-0, tok-1, … */
export function testAllocator(kube: MemoryKube, clock: FakeClock, pods: PodCache): SlotAllocator {
  let n = 0;
  return new SlotAllocator({
    kube,
    namespace: "wave",
    clock,
    pods,
    token: () => `tok-${n++}`,
    ledgerCacheMs: 0,
    backing: new BackingVerifier({ kube, limiter: new SourceLimiter(clock) }),
  });
}

/** A started pod watch over `kube` (its first list done). */
export async function startedPods(kube: MemoryKube, clock: FakeClock): Promise<PodCache> {
  const pods = new PodCache({ kube, clock }).start();
  await pods.synced;
  return pods;
}

/**
 * Policies for the admission fixtures' workloads (test/fixtures/admission): shop's web and
 * checkout Deployments Prefer, its db StatefulSet and api Deployment Require.
 */
export const fixturePolicies = (threshold: { web: number; db: number; api: number; checkout: number }) => {
  const shop = (kind: WorkloadKind, name: keyof typeof threshold, strategy: Strategy): SpotPolicy => ({
    workload: { namespace: "shop", kind, name },
    threshold: threshold[name],
    strategy,
  });
  return policySource(
    shop("Deployment", "web", "Prefer"),
    shop("StatefulSet", "db", "Require"),
    shop("Deployment", "api", "Require"),
    shop("Deployment", "checkout", "Prefer"),
  );
};
