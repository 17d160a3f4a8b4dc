// The warmup controller's unit-test bench: one NodePool with one full node, the controller over
// an in-memory apiserver, and what Karpenter + the scheduler do for a pending warmup pod.
import { FakeClock } from "../../shared/clock.ts";
import type { Pod } from "../../objects/kube.ts";
import { WarmupController } from "../controller.ts";
import { isPrepullPod, isWarmupPod } from "../../objects/wave.ts";
import { DEFAULT_POLICY, type WarmupPolicy } from "../../policy/warmup.ts";
import type { WarmupEvent } from "../stats.ts";
import { TestKube } from "./kube.ts";
import { node, nodeClaim, nodePool, pod, T0 } from "./fixtures.ts";

export const NS = "wave";

export async function setup(policy: Partial<WarmupPolicy> = {}) {
  const clock = new FakeClock(T0);
  const kube = new TestKube(clock);
  const events: WarmupEvent[] = [];
  const pol: WarmupPolicy = { ...DEFAULT_POLICY, enabled: true, prePull: false, ...policy };
  const controller = (): WarmupController =>
    new WarmupController({
      client: kube,
      view: kube.state,
      clock,
      namespace: NS,
      policyOf: () => pol,
      priceOf: () => 0.1,
      onEvent: (e) => events.push(e),
    });
  await kube.create("NodePool", nodePool("general"));
  // One full node: a 3-CPU pod on a 4-CPU node leaves no room for another.
  await kube.create("Node", node("n1", "general", { cpu: "4", memory: "16Gi" }));
  await kube.create("Pod", pod("big", { cpu: "3", memory: "4Gi", node: "n1", image: "example.com/big:1" }));
  return { clock, kube, events, controller };
}

export const warmups = async (kube: TestKube): Promise<Pod[]> => (await kube.all("Pod")).filter(isWarmupPod);
export const pulls = async (kube: TestKube): Promise<Pod[]> => (await kube.all("Pod")).filter(isPrepullPod);

/** What Karpenter + the scheduler do for a pending warmup pod: a node, its NodeClaim, binding. */
export async function launchFor(
  kube: TestKube,
  wp: Pod,
  nodeName: string,
  images: string[] = [],
): Promise<void> {
  await kube.create("Node", node(nodeName, "general", { cpu: "4", memory: "16Gi", images }));
  await kube.create("NodeClaim", nodeClaim(`claim-${nodeName}`, "general", nodeName));
  await kube.patch(
    "Pod",
    wp.metadata.name ?? "",
    { spec: { nodeName }, status: { phase: "Running" } },
    { namespace: NS },
  );
}
