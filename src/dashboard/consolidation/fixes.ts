// The change that lifts each blocker, as a JSON merge patch on the object that causes it and the
// kubectl line that applies it. Valid for the cluster's Karpenter (v1 API, every tested release):
// a budget's `reasons` came with v1.0 (older than Wave's range); Balanced only from v1.14, so the
// WhenEmpty fix offers WhenEmptyOrUnderutilized, which every release accepts.
import type { BlockerDto, BlockerFixDto } from "../dto.ts";
import type { Node } from "../../objects/kube.ts";
import type { NodePool } from "../../objects/karpenter.ts";
import { DO_NOT_DISRUPT_ANNOTATION } from "../../objects/karpenter.ts";
import { karpenterAccepts } from "../../karpenter/compat.ts";
import { shellCommand } from "../../shared/shell.ts";
import type { Hold, PoolField } from "../pool-advice.ts";

/** `kubectl patch` of one object with a JSON merge patch, every argument shell-quoted. */
export function kubectlMergePatch(
  target: { kind: string; namespace: string | null; name: string },
  patch: Record<string, unknown>,
): string {
  const ns = target.namespace ? ["-n", target.namespace] : [];
  return shellCommand([
    "kubectl",
    "patch",
    target.kind.toLowerCase(),
    target.name,
    ...ns,
    "--type",
    "merge",
    "-p",
    JSON.stringify(patch),
  ]);
}

export interface FixContext {
  pool: NodePool | undefined;
  node: Node | undefined;
  version: string | undefined;
  /** The pool's holds (pool-advice.ts): the values every advice path keeps. */
  holds?: readonly Hold[] | undefined;
}

const removeDoNotDisrupt = { metadata: { annotations: { [DO_NOT_DISRUPT_ANNOTATION]: null } } };

/** The fix for one blocker, or null when there is nothing to change (wait, or Karpenter's doing). */
export function blockerFix(b: BlockerDto, ctx: FixContext): BlockerFixDto | null {
  const fix = (
    title: string,
    detail: string,
    patch: Record<string, unknown> | null,
    target = b.object,
  ): BlockerFixDto => ({
    title,
    detail,
    target,
    patch,
    kubectl: patch ? kubectlMergePatch(target, patch) : null,
  });
  const d = ctx.pool?.spec.disruption ?? {};
  const held = (f: PoolField): Hold | undefined => ctx.holds?.find((h) => h.field === f);
  // A pool field another advice path holds: no patch that would undo it, the reason instead.
  const kept = (h: Hold, title: string): BlockerFixDto =>
    fix(title, `${h.why}. Consolidation advice does not undo it.`, null);
  const heldAfter = held("consolidateAfter")?.value;
  const after = typeof heldAfter === "string" && heldAfter !== "Never" ? heldAfter : undefined;
  switch (b.reason) {
    case "do-not-disrupt-pod":
      return fix(
        "Remove karpenter.sh/do-not-disrupt from the pod",
        "The pod keeps its node until it ends. Remove the annotation from the pod (and from its workload's pod template, or the next pod carries it again).",
        removeDoNotDisrupt,
      );
    case "do-not-disrupt-node":
      return fix(
        `Remove karpenter.sh/do-not-disrupt from the ${b.object.kind}`,
        "Karpenter then treats the node as any other.",
        removeDoNotDisrupt,
      );
    case "wave-warm-node":
      return fix(
        "Lower the pool's warmup policy",
        "Wave's warmup keeps this node warm for the pool's next pods and releases it when its policy's idle time ends; lower the policy's warm nodes or idle time on the Warmup page.",
        null,
      );
    case "pdb":
      // maxUnavailable 1 lets one pod go at a time; minAvailable is cleared (a PDB sets one of them).
      return fix(
        "Let the PodDisruptionBudget allow one disruption",
        "It allows 0 now (e.g. minAvailable equal to the replicas, or maxUnavailable 0): allow one, or run more replicas so minAvailable leaves room.",
        { spec: { minAvailable: null, maxUnavailable: 1 } },
      );
    case "budget": {
      const hb = held("budgets");
      if (hb) return kept(hb, "Leave the NodePool's disruption budget as it is");
      const budgets = d.budgets && d.budgets.length > 0 ? d.budgets : [{ nodes: "10%" }];
      const closed = (x: { nodes: string }): boolean => x.nodes.trim() === "0" || x.nodes.trim() === "0%";
      // Nothing set to 0: the budget is used up by the disruptions in progress, and frees itself.
      if (!budgets.some(closed))
        return fix(
          "Wait for the disruptions in progress",
          "The budget allows some nodes, all being disrupted now; it frees itself as they finish.",
          null,
        );
      const opened = budgets.map((x) => (closed(x) ? { ...x, nodes: "1" } : x));
      return fix(
        "Allow at least one node in the NodePool's disruption budget",
        b.until
          ? "The budget opens by itself when its window ends; to consolidate sooner, allow one node in it."
          : "The budget allows no disruption now; allow one node (or a percentage).",
        { spec: { disruption: { budgets: opened } } },
      );
    }
    case "when-empty": {
      const hp = held("consolidationPolicy");
      if (hp) return kept(hp, "Keep the NodePool's consolidation policy");
      const balanced = karpenterAccepts(ctx.version, "consolidationPolicy: Balanced");
      return fix(
        "Consolidate under-used nodes too (WhenEmptyOrUnderutilized)",
        `WhenEmpty consolidates only empty nodes.${balanced ? " Karpenter ≥ v1.14 also offers Balanced (consolidates only when the savings outweigh the disruption)." : ""}`,
        {
          spec: {
            disruption: {
              consolidationPolicy: "WhenEmptyOrUnderutilized",
              consolidateAfter:
                after ?? (d.consolidateAfter && d.consolidateAfter !== "Never" ? d.consolidateAfter : "1m"),
            },
          },
        },
      );
    }
    case "consolidation-disabled":
      return fix(
        "Set a consolidateAfter",
        `consolidateAfter: Never disables consolidation for the pool.${after ? ` ${after}: the value the pool's thrashing advice keeps.` : ""}`,
        { spec: { disruption: { consolidateAfter: after ?? "1m" } } },
      );
    case "consolidate-after":
      // A wait, not a blocker: shortening it is what makes a pool thrash (docs/thrashing.md).
      return fix(
        "consolidateAfter elapses by itself",
        "Karpenter waits consolidateAfter after the node's last pod event, so that a dip in demand does not remove a node the pods need again minutes later; nothing to change.",
        null,
      );
    case "no-controller":
      return fix(
        "Run the pod under a controller",
        "A bare pod is evicted by consolidation and nothing recreates it: run it as a Deployment, StatefulSet or Job.",
        null,
      );
    case "pods-fit-nowhere":
      return fix(
        "Give the pod somewhere else to go",
        "No other node or NodePool can take this pod (see its requirement): relax its node selector or affinity, or let a NodePool offer it.",
        null,
      );
    case "not-initialized":
    case "karpenter":
      return null;
    // Karpenter ignores a static pool's consolidation settings: no patch would change anything.
    case "static":
      return null;
  }
}

/**
 * A blocker's fix on a node consolidation would save nothing on: no patch (the change would buy
 * nothing now, and a pool setting changed for it may undo another advice), the reason instead.
 */
export function noGainFix(f: BlockerFixDto | null): BlockerFixDto | null {
  if (!f?.patch) return f;
  return {
    ...f,
    detail: `Nothing to gain now: consolidating this node would save $0 (not under-used), so Wave proposes no change for it. ${f.detail}`,
    patch: null,
    kubectl: null,
  };
}
