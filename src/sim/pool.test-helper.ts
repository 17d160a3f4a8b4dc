// The KWOK NodePool the simulator's and the what-if's tests replay on: linux nodes of one size,
// spot or on-demand, consolidated when empty or underutilized.
import type { NodePool } from "../objects/karpenter.ts";

export function kwokTestPool(name: string, o: { cpu: string; consolidateAfter: string }): NodePool {
  return {
    apiVersion: "karpenter.sh/v1",
    kind: "NodePool",
    metadata: { name },
    spec: {
      disruption: { consolidationPolicy: "WhenEmptyOrUnderutilized", consolidateAfter: o.consolidateAfter },
      template: {
        spec: {
          requirements: [
            { key: "kubernetes.io/os", operator: "In", values: ["linux"] },
            { key: "karpenter.sh/capacity-type", operator: "In", values: ["spot", "on-demand"] },
            { key: "karpenter.kwok.sh/instance-cpu", operator: "In", values: [o.cpu] },
          ],
        },
      },
    },
  };
}
