// What wakes the warmup controller before its requeue time: changes in the cluster state that
// can start or end a warmup. A new pod on a warm node is a hit to release now; a new pending pod
// or a node turning Ready can call for a warmup or a pre-pull. Updates that change neither
// (status heartbeats, a running pod's conditions) wake nothing.
import { NODE_POOL_LABEL } from "../objects/karpenter.ts";
import type { Node, Pod } from "../objects/kube.ts";
import { WARMUP_POOL_LABEL } from "../objects/wave.ts";
import { poolOfPod } from "../karpenter/pool-of-pod.ts";
import { isNodeReady } from "./fit/detect.ts";
import type { WarmupView } from "./view.ts";

const NO_NODES: ReadonlyMap<string, Node> = new Map();

/** The pool a pod's change concerns, if any. */
function poolOfChange(view: WarmupView, pod: Pod): string | undefined {
  const wave = pod.metadata.labels?.[WARMUP_POOL_LABEL];
  if (wave !== undefined) return wave;
  const nodeName = pod.spec.nodeName;
  if (nodeName !== undefined && nodeName !== "")
    return view.node(nodeName)?.metadata.labels?.[NODE_POOL_LABEL];
  return poolOfPod(pod, view.nodePools(), NO_NODES);
}

/** For runController's `triggers`: subscribes to the state, pokes the pools that changed. */
export function warmupTriggers(view: WarmupView): (poke: (pool: string) => void) => () => void {
  return (poke) =>
    view.subscribe(
      (c) => {
        let pool: string | undefined;
        switch (c.kind) {
          case "Pod": {
            const bound =
              c.type === "add" ||
              (c.type === "update" && (c.previous?.spec.nodeName ?? "") !== (c.object.spec.nodeName ?? ""));
            if (bound) pool = poolOfChange(view, c.object);
            break;
          }
          case "Node":
            if (
              c.type !== "update" ||
              isNodeReady(c.object) !== (c.previous ? isNodeReady(c.previous) : false)
            )
              pool = c.object.metadata.labels?.[NODE_POOL_LABEL];
            break;
          case "NodePool":
            pool = c.object.metadata.name;
            break;
          default:
            return;
        }
        if (pool !== undefined && pool !== "") poke(pool);
      },
      ["Pod", "Node", "NodePool"],
    );
}
