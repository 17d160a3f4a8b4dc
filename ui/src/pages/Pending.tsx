// Pending pods and why Karpenter has not launched a node for each (its FailedScheduling Events
// read per NodePool, the pool named where Karpenter left it out), with per reason the fix and what
// its node would cost, and how long each has waited. On the overview, whose card counts the same
// read (one request: the card and the table cannot disagree).
import type { PendingPodDto, PendingViewDto } from "../../../src/dashboard/dto.ts";
import { Copy } from "../Copy.tsx";
import { duration, usd } from "../format.ts";
import type { AsyncState } from "../hooks.ts";
import { Loadable } from "../Status.tsx";
import { Table, type Column } from "../Table.tsx";

const KIND_LABEL: Record<string, string> = {
  requirement: "requirement",
  taint: "taint",
  limit: "pool at its limit",
  resources: "no instance type fits",
  "no-nodepool": "no NodePool",
  other: "other",
};

type Reason = PendingPodDto["reasons"][number];

function ReasonItem({ r }: { r: Reason }) {
  return (
    <li title={r.detail} data-testid="pending-reason" data-kind={r.kind}>
      <span className="tag warn">{KIND_LABEL[r.kind] ?? r.kind}</span> {r.text}
      {r.fix ? (
        <div className="fix">
          <b>Fix:</b> {r.fix.title}
          {r.costPerHour !== null ? (
            <span data-testid="pending-fix-cost">
              {" "}
              · its node ≈ <b>{usd(r.costPerHour)}/h</b>
            </span>
          ) : null}
          {r.fix.kubectl ? (
            <div className="cmd">
              <code data-testid="pending-fix-patch">{r.fix.kubectl}</code>
              <Copy text={r.fix.kubectl} />
            </div>
          ) : (
            <div className="muted">{r.fix.detail}</div>
          )}
        </div>
      ) : null}
    </li>
  );
}

/** A pod's name that wraps only after "/" and "-" (never mid-word in a narrow column). */
function PodName({ p }: { p: PendingPodDto }) {
  const parts = `${p.namespace}/${p.name}`.split(/(?<=[/-])/);
  return (
    <span style={{ overflowWrap: "normal", wordBreak: "normal" }}>
      {parts.map((s, i) => (
        <span key={i}>
          {s}
          <wbr />
        </span>
      ))}
    </span>
  );
}

const columns: Column<PendingPodDto>[] = [
  { key: "pod", label: "pod", value: (p) => `${p.namespace}/${p.name}`, render: (p) => <PodName p={p} /> },
  {
    key: "waiting",
    label: "waiting",
    numeric: true,
    value: (p) => p.waitingSeconds,
    render: (p) => duration(p.waitingSeconds),
  },
  {
    key: "why",
    label: "why Karpenter launched no node, and the fix",
    value: (p) => p.reasons.map((r) => r.text).join("; ") || p.lastEvent?.message || null,
    render: (p) =>
      p.nominatedTo ? (
        <span className="muted">a node is on its way: {p.nominatedTo}</span>
      ) : p.reasons.length === 0 ? (
        <span className="muted">Karpenter has said nothing yet</span>
      ) : (
        <ul className="reasons">
          {p.reasons.map((r, i) => (
            <ReasonItem key={i} r={r} />
          ))}
        </ul>
      ),
  },
];

/** The pending pods section, over the Overview's one read of `…/pending`. */
export function PendingPods({ view }: { view: AsyncState<PendingViewDto> }) {
  return (
    <section className="panel" data-testid="pending-pods">
      <Loadable state={view} what="pending pods">
        {(v) => (
          <>
            <Table
              label="Pending pods: why Karpenter launched no node"
              columns={columns}
              rows={v.pods}
              rowKey={(p) => `${p.namespace}/${p.name}`}
              empty="No pending pods: every pod has a node."
              initialSort={{ key: "waiting", desc: true }}
              rowTestId="pending-row"
            />
          </>
        )}
      </Loadable>
    </section>
  );
}
