// The header's versions: Kubernetes and the detected Karpenter, plus a warning tag when that
// Karpenter is outside the releases Wave is tested with (docs/compatibility.md).
import type { ClusterDto } from "../../src/dashboard/dto.ts";

export function Versions({ cluster }: { cluster: ClusterDto }) {
  const s = cluster.karpenterSupport;
  return (
    <>
      <span className="muted versions" data-testid="versions" title={s.warning ?? undefined}>
        Kubernetes {cluster.kubernetesVersion ?? "?"} · Karpenter {cluster.karpenterVersion ?? "?"}
      </span>
      {s.status === "older" || s.status === "newer" ? (
        <span className="tag warn" role="status" data-testid="karpenter-untested" title={s.warning ?? ""}>
          Karpenter {cluster.karpenterVersion} untested · Wave is tested with {s.oldestTested}–
          {s.newestTested}
        </span>
      ) : null}
    </>
  );
}
