// A pod's start (pending → running): from its creation to its Ready condition. One definition for
// the warmup controller (a hit's measured start), core's cold starts and the Warmup page.
import type { Node, Pod } from "../objects/kube.ts";

const parse = (s: string | undefined): number | undefined => {
  if (s === undefined) return undefined;
  const t = Date.parse(s);
  return Number.isNaN(t) ? undefined : t;
};

/** When a pod became Ready, epoch ms; undefined while it is not. */
export function readyAt(p: Pod): number | undefined {
  const c = p.status?.conditions?.find((x) => x.type === "Ready" && x.status === "True");
  return parse(c?.lastTransitionTime);
}

/** Seconds from the pod's creation to Ready; undefined while it is not Ready (or unreadable). */
export function startSeconds(p: Pod): number | undefined {
  const created = parse(p.metadata.creationTimestamp);
  const ready = readyAt(p);
  if (created === undefined || ready === undefined || ready < created) return undefined;
  return (ready - created) / 1000;
}

/**
 * Whether `node` was created at or after `since` (epoch ms): a node launched for what began then.
 * creationTimestamp has whole seconds, so `since` is compared at that granularity.
 */
export function createdSince(node: Node, since: number): boolean {
  const created = parse(node.metadata.creationTimestamp);
  return created !== undefined && created >= Math.floor(since / 1000) * 1000;
}
