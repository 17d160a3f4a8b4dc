// Image pre-pull planning (pure): which images a warm node still lacks and how a pull pod ended.
import type { Node, Pod } from "../objects/kube.ts";
import { PREPULL_IMAGE_ANNOTATION } from "../objects/wave.ts";

/** Images of the pool's workload pods (app and init containers), deduplicated, sorted. */
export function workloadImages(pods: readonly Pod[]): string[] {
  const out = new Set<string>();
  for (const p of pods) {
    for (const c of [...(p.spec.initContainers ?? []), ...p.spec.containers]) {
      if (c.image !== undefined && c.image !== "") out.add(c.image);
    }
  }
  return [...out].sort();
}

/**
 * The kubelet reports images by every name it knows them by, fully qualified
 * ("docker.io/library/nginx:1.27") or as written; compare on a normalized form.
 */
export function normalizeImage(ref: string): string {
  let name = ref;
  const firstSlash = name.indexOf("/");
  const first = firstSlash === -1 ? "" : name.slice(0, firstSlash);
  const hasRegistry = first.includes(".") || first.includes(":") || first === "localhost";
  if (!hasRegistry) name = `docker.io/${firstSlash === -1 ? `library/${name}` : name}`;
  const lastSegment = name.slice(name.lastIndexOf("/") + 1);
  if (!lastSegment.includes(":") && !lastSegment.includes("@")) name += ":latest";
  return name;
}

export function imagesOnNode(node: Node): Set<string> {
  const out = new Set<string>();
  for (const img of node.status?.images ?? []) for (const n of img.names ?? []) out.add(normalizeImage(n));
  return out;
}

export interface PullPlan {
  /** Images to start pulling now (all at once). */
  pull: string[];
  /** Images skipped for lack of pod slots; retried on a later reconcile. */
  deferred: string[];
}

/**
 * Images the node lacks and no pull pod is already working on, limited by the node's free pod
 * slots (pull pods are pods too).
 */
export function planPulls(
  images: readonly string[],
  node: Node,
  existingPullPods: readonly Pod[],
  freePodSlots: number,
): PullPlan {
  const present = imagesOnNode(node);
  const inFlight = new Set(existingPullPods.map((p) => p.metadata.annotations?.[PREPULL_IMAGE_ANNOTATION]));
  const todo = images.filter((i) => !present.has(normalizeImage(i)) && !inFlight.has(i));
  const n = Math.max(0, freePodSlots);
  return { pull: todo.slice(0, n), deferred: todo.slice(n) };
}

export type PullOutcome = "pulling" | "pulled" | "failed";

const PULL_ERRORS = new Set(["ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"]);

/**
 * Reads a pull pod's status. A container that got as far as being created or started (running,
 * terminated, or the start error Wave's command that never exists causes — manifests.ts) means
 * the image is on the node; a pull error or a deadline hit before that means it is not.
 */
export function pullOutcome(pod: Pod): PullOutcome {
  const cs = pod.status?.containerStatuses?.[0];
  const state = cs?.state ?? {};
  const waitingReason = (state.waiting as { reason?: string } | undefined)?.reason;
  if (pod.status?.phase === "Succeeded") return "pulled";
  if (state.terminated !== undefined || state.running !== undefined) return "pulled";
  if (
    waitingReason !== undefined &&
    ["CreateContainerError", "RunContainerError", "StartError"].includes(waitingReason)
  ) {
    return "pulled";
  }
  if (waitingReason !== undefined && PULL_ERRORS.has(waitingReason)) return "failed";
  if (pod.status?.phase === "Failed") return "failed";
  return "pulling";
}
