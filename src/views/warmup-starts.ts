// The Warmup page's measured start times (pure): per pool, its pods' creation → Ready split into
// cold starts and warm hits (shown for reference; time saved is dashboard/figures/time-saved.ts).
import { NODE_POOL_LABEL } from "../objects/karpenter.ts";
import type { Node, Pod } from "../objects/kube.ts";
import { isDaemonSetPod } from "../karpenter/room.ts";
import { isWavePod, parseTime } from "../objects/wave.ts";
import { readyAt } from "../karpenter/pod-start.ts";

/** The median, null for none. */
export const median = (xs: number[]): number | null => {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] ?? 0) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
};



/**
 * Start latencies of the pool's pods (creation → Ready), split into cold starts (the pod is older
 * than its node: it waited for a launch) and warm hits (it landed on a node Wave held warm when
 * it arrived). Pods that found room on an older node are neither.
 */
export function startSamples(
  pods: readonly Pod[],
  nodesByName: ReadonlyMap<string, Node>,
  warmedNodes: ReadonlySet<string>,
): { cold: number[]; warm: number[] } {
  const cold: number[] = [];
  const warm: number[] = [];
  for (const p of pods) {
    if (isWavePod(p) || isDaemonSetPod(p)) continue;
    const created = parseTime(p.metadata.creationTimestamp);
    const ready = readyAt(p);
    const node = nodesByName.get(p.spec.nodeName ?? "");
    if (created === undefined || ready === undefined || node === undefined || ready < created) continue;
    const nodeCreated = parseTime(node.metadata.creationTimestamp);
    const seconds = (ready - created) / 1000;
    if (warmedNodes.has(node.metadata.name ?? "")) {
      if (nodeCreated !== undefined && nodeCreated <= created) warm.push(seconds);
    } else if (nodeCreated !== undefined && nodeCreated > created) cold.push(seconds);
  }
  return { cold, warm };
}

/** Measured pod start times of the pool in the range (shown for reference; time saved is one definition). */
export function poolStarts(
  name: string,
  ctx: {
    input: { from: number; to: number };
    pods: readonly Pod[];
    nodesByName: ReadonlyMap<string, Node>;
    warmedNodes: ReadonlySet<string>;
  },
): { cold: number[]; warm: number[] } {
  const { from, to } = ctx.input;
  const inRange = ctx.pods.filter((p) => {
    const n = ctx.nodesByName.get(p.spec.nodeName ?? "");
    if (n?.metadata.labels?.[NODE_POOL_LABEL] !== name) return false;
    const r = readyAt(p);
    return r !== undefined && r >= from && r < to;
  });
  return startSamples(inRange, ctx.nodesByName, ctx.warmedNodes);
}
