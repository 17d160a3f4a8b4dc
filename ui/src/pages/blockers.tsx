// Blockers (why Karpenter will not disrupt a node) as a user reads them: a short label per reason,
// the object that causes it, and its fix as a copyable kubectl patch. Shared by the Consolidation
// page and the node drawer.
import type { BlockerDto, BlockerReason } from "../../../src/dashboard/dto.ts";
import { Copy } from "../Copy.tsx";
import { dateTime } from "../format.ts";

export const REASON_LABEL: Record<BlockerReason, string> = {
  "do-not-disrupt-pod": "do-not-disrupt pod",
  "do-not-disrupt-node": "do-not-disrupt node",
  "wave-warm-node": "Wave warm node",
  pdb: "PDB allows 0",
  budget: "NodePool budget 0",
  "when-empty": "WhenEmpty, not empty",
  "consolidation-disabled": "consolidation disabled",
  "consolidate-after": "consolidateAfter not elapsed",
  "not-initialized": "not initialized",
  "pods-fit-nowhere": "pods fit nowhere else",
  "no-controller": "pod without controller",
  karpenter: "Karpenter says",
  static: "static NodePool",
};

export const reasonLabel = (r: string): string =>
  Object.hasOwn(REASON_LABEL, r) ? REASON_LABEL[r as BlockerReason] : r;

export const objectLabel = (o: BlockerDto["object"]): string =>
  `${o.kind} ${o.namespace ? `${o.namespace}/` : ""}${o.name}`;

/** One blocker: what, which object, until when, and the patch that lifts it. */
export function BlockerItem({ b }: { b: BlockerDto }) {
  return (
    <li data-testid="blocker" data-reason={b.reason} className={b.blocking ? "" : "muted"}>
      <span className={`tag ${b.blocking ? "bad" : "warn"}`}>{reasonLabel(b.reason)}</span>{" "}
      {b.waiting ? <span className="tag">waiting</span> : null}
      <b>{objectLabel(b.object)}</b>
      {b.until !== null ? <span className="muted"> · lifts {dateTime(b.until)}</span> : null}
      {b.source === "event" ? <span className="muted"> · from Karpenter's Event</span> : null}
      <div className="muted">{b.message}</div>
      {b.pods.length ? <div className="muted">pods: {b.pods.join(", ")}</div> : null}
      {b.fix ? (
        <div className="fix">
          <b>{b.waiting ? "Wait:" : "Fix:"}</b> {b.fix.title}
          {b.fix.detail ? <span className="muted"> — {b.fix.detail}</span> : null}
          {b.fix.kubectl ? (
            <div className="cmd">
              <code data-testid="blocker-patch">{b.fix.kubectl}</code>
              <Copy text={b.fix.kubectl} />
            </div>
          ) : null}
        </div>
      ) : null}
    </li>
  );
}
