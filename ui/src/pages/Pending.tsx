// Pending pods and why Karpenter has not launched a node for each (its FailedScheduling Events
// read per NodePool), with how long each has waited. On the overview.
import type { PendingPodDto, PendingViewDto } from "../../../src/dashboard/dto.ts";
import type { PageCtx } from "../ctx.ts";
import { duration } from "../format.ts";
import { useJson } from "../hooks.ts";
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

const columns: Column<PendingPodDto>[] = [
  { key: "pod", label: "pod", value: (p) => `${p.namespace}/${p.name}` },
  {
    key: "waiting",
    label: "waiting",
    numeric: true,
    value: (p) => p.waitingSeconds,
    render: (p) => duration(p.waitingSeconds),
  },
  {
    key: "why",
    label: "why Karpenter launched no node",
    value: (p) => p.reasons.map((r) => r.text).join("; ") || p.lastEvent?.message || null,
    render: (p) =>
      p.nominatedTo ? (
        <span className="muted">a node is on its way: {p.nominatedTo}</span>
      ) : p.reasons.length === 0 ? (
        <span className="muted">Karpenter has said nothing yet</span>
      ) : (
        <ul className="reasons">
          {p.reasons.map((r, i) => (
            <li key={i} title={r.detail}>
              <span className="tag warn">{KIND_LABEL[r.kind] ?? r.kind}</span>{" "}
              {r.nodePool ? <b>{r.nodePool}: </b> : null}
              {r.text}
            </li>
          ))}
        </ul>
      ),
  },
];

export function PendingPods({ ctx }: { ctx: PageCtx }) {
  const view = useJson<PendingViewDto>(`${ctx.base}/pending`, ctx.token, ctx.version, 5000);
  return (
    <section className="panel" data-testid="pending-pods">
      <Loadable state={view} what="pending pods">
        {(v) => (
          <Table
            label="Pending pods: why Karpenter launched no node"
            columns={columns}
            rows={v.pods}
            rowKey={(p) => `${p.namespace}/${p.name}`}
            empty="No pending pods: every pod has a node."
            initialSort={{ key: "waiting", desc: true }}
            rowTestId="pending-row"
          />
        )}
      </Loadable>
    </section>
  );
}
