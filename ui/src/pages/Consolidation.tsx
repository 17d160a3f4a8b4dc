// Why Karpenter does not consolidate nodes (issue 34): blocked nodes by reason and by what
// consolidating them would save, sums per NodePool and reason, filters (pool, reason; in the URL),
// and each blocker's fix as a copyable kubectl patch.
import type { BlockerDto, ConsolidationViewDto, NodeDisruptionDto } from "../../../src/dashboard/dto.ts";
import type { PageCtx } from "../ctx.ts";
import { Copy } from "../Copy.tsx";
import { num, usd } from "../format.ts";
import { useJson } from "../hooks.ts";
import { Card, Loadable } from "../Status.tsx";
import { Table, type Column } from "../Table.tsx";
import { objectLabel, reasonLabel } from "./blockers.tsx";

type Item = NodeDisruptionDto;
type PoolReason = ConsolidationViewDto["byPoolReason"][number];

const blocking = (n: Item): BlockerDto[] => n.blockers.filter((b) => b.blocking);

const nodeColumns: Column<Item>[] = [
  { key: "node", label: "node", value: (n) => n.node },
  { key: "pool", label: "pool", value: (n) => n.nodePool },
  {
    key: "reasons",
    label: "blocked by",
    value: (n) =>
      blocking(n)
        .map((b) => reasonLabel(b.reason))
        .join(", "),
    render: (n) => (
      <>
        {blocking(n).map((b) => (
          <span key={`${b.reason}/${objectLabel(b.object)}`} className="tag bad" title={b.message}>
            {reasonLabel(b.reason)}
          </span>
        ))}
      </>
    ),
  },
  {
    key: "object",
    label: "object",
    value: (n) => {
      const b = blocking(n)[0];
      return b ? objectLabel(b.object) : null;
    },
    wide: true,
  },
  {
    key: "cost",
    label: "$/h",
    numeric: true,
    value: (n) => n.costPerHour,
    render: (n) => (n.costPerHour === null ? "—" : usd(n.costPerHour)),
  },
  {
    key: "saves",
    label: "would save $/h",
    numeric: true,
    value: (n) => n.savingsPerHour,
    render: (n) => (n.savingsPerHour > 0 ? usd(n.savingsPerHour) : "—"),
    title:
      "what consolidating it would save in the plan of every blocked node: all of its price (its pods fit in room no other blocked node takes) or its price minus a cheaper replacement's",
  },
  {
    key: "action",
    label: "consolidation",
    value: (n) =>
      n.action === "replace" && n.replacement ? `replace → ${n.replacement.instanceType}` : n.action,
    render: (n) =>
      n.action === null
        ? "not under-used"
        : n.action === "replace" && n.replacement
          ? `replace → ${n.replacement.instanceType} (${n.replacement.capacityType})`
          : n.empty
            ? "delete (empty)"
            : "delete",
    wide: true,
  },
];

const poolReasonColumns: Column<PoolReason>[] = [
  { key: "pool", label: "pool", value: (r) => r.nodePool },
  { key: "reason", label: "reason", value: (r) => reasonLabel(r.reason) },
  {
    key: "nodes",
    label: "blocked nodes",
    numeric: true,
    value: (r) => r.blockedNodes,
    render: (r) => num(r.blockedNodes),
  },
  {
    key: "cost",
    label: "blocked $/h",
    numeric: true,
    value: (r) => r.blockedCostPerHour,
    render: (r) => usd(r.blockedCostPerHour),
  },
];

/** The fixes of the shown nodes, one per distinct patch (a PDB blocking three nodes is one fix). */
export function fixesOf(items: readonly Item[]): { blocker: BlockerDto; nodes: string[] }[] {
  const out = new Map<string, { blocker: BlockerDto; nodes: string[] }>();
  for (const n of items)
    for (const b of blocking(n)) {
      const k = b.fix?.kubectl ?? `${b.reason}|${objectLabel(b.object)}`;
      const hit = out.get(k);
      if (hit) hit.nodes.push(n.node);
      else out.set(k, { blocker: b, nodes: [n.node] });
    }
  return [...out.values()];
}

export function Consolidation({ ctx }: { ctx: PageCtx }) {
  const { route } = ctx;
  const pool = route.params["pool"] ?? "";
  const reason = route.params["reason"] ?? "";
  const q = new URLSearchParams();
  if (pool) q.set("nodePool", pool);
  if (reason) q.set("reason", reason);
  const qs = q.toString();
  const view = useJson<ConsolidationViewDto>(
    `${ctx.base}/consolidation${qs ? `?${qs}` : ""}`,
    ctx.token,
    ctx.version,
    5000,
  );
  const setParam = (k: string, v: string): void => ctx.go({ params: { ...route.params, [k]: v } });
  return (
    <Loadable state={view} what="consolidation">
      {(v) => {
        // Blocked: a blocker stands between Karpenter and a saving (waits and $0 nodes are not).
        const blocked = v.items.filter((n) => n.blocked);
        const pools = [...new Set([...v.byPool.map((p) => p.nodePool), ...(pool ? [pool] : [])])].sort();
        const reasons = [
          ...new Set([...v.byReason.map((r) => r.reason as string), ...(reason ? [reason] : [])]),
        ];
        const top = [...v.byReason].sort((a, b) => b.blockedCostPerHour - a.blockedCostPerHour)[0];
        const fixes = fixesOf(blocked);
        return (
          <>
            <section className="cards" aria-label="blocked consolidation">
              <Card
                label="blocked nodes"
                value={num(v.blockedNodes)}
                testid="consolidation-blocked"
                tone={v.blockedNodes ? "warn" : ""}
                sub={`of ${num(v.nodes)} Karpenter nodes · ${num(v.waitingNodes)} waiting for consolidateAfter${v.staticNodes ? ` · ${num(v.staticNodes)} in static pools` : ""}${v.karpenterVersion ? ` · Karpenter ${v.karpenterVersion}` : ""}`}
              />
              <Card
                label="if the blockers were lifted, $/h"
                value={usd(v.blockedCostPerHour)}
                testid="consolidation-cost"
                sub={`consolidation could save ${usd(v.blockedCostPerHour)}/h (${usd(v.blockedCostPerHour * 730)} / month): the blocked nodes planned together, each spare room used once`}
              />
              <Card
                label="costliest reason"
                value={top && top.blockedCostPerHour > 0 ? reasonLabel(top.reason) : "—"}
                testid="consolidation-top"
                sub={
                  top
                    ? `${num(top.blockedNodes)} nodes · ${usd(top.blockedCostPerHour)}/h`
                    : "nothing blocked"
                }
              />
            </section>
            <section className="panel filters" aria-label="filters">
              <label>
                pool{" "}
                <select
                  value={pool}
                  onChange={(e) => setParam("pool", e.target.value)}
                  aria-label="filter by pool"
                >
                  <option value="">all pools</option>
                  {pools.map((p) => (
                    <option key={p}>{p}</option>
                  ))}
                </select>
              </label>
              <label>
                reason{" "}
                <select
                  value={reason}
                  onChange={(e) => setParam("reason", e.target.value)}
                  aria-label="filter by reason"
                >
                  <option value="">all reasons</option>
                  {reasons.map((r) => (
                    <option key={r} value={r}>
                      {reasonLabel(r)}
                    </option>
                  ))}
                </select>
              </label>
            </section>
            <section className="panel" data-testid="consolidation-sums">
              <Table
                label="Blocked per NodePool and reason"
                columns={poolReasonColumns}
                rows={v.byPoolReason.filter(
                  (r) => (!pool || r.nodePool === pool) && (!reason || r.reason === reason),
                )}
                rowKey={(r) => `${r.nodePool}/${r.reason}`}
                empty="Nothing blocks consolidation for these filters."
                initialSort={{ key: "cost", desc: true }}
                rowTestId="pool-reason-row"
                onRow={(r) => ctx.go({ params: { ...route.params, pool: r.nodePool, reason: r.reason } })}
              />
              <p className="muted">
                What consolidation could save per hour on the nodes Karpenter may not disrupt if their
                blockers were lifted, planned together (each spare room used once); a node blocked for two
                reasons counts under both. Nodes waiting for consolidateAfter and nodes that would save
                nothing are not blocked. Pick a row to filter by it.
              </p>
            </section>
            <section className="panel">
              <Table
                label="Nodes Karpenter may not disrupt"
                columns={nodeColumns}
                rows={blocked}
                rowKey={(n) => n.node}
                empty={
                  pool || reason
                    ? "No blocked node for these filters."
                    : "Karpenter may disrupt every node: nothing blocks consolidation."
                }
                initialSort={{ key: "saves", desc: true }}
                rowTestId="blocked-row"
                testId="blocked-nodes"
                onRow={(n) => ctx.go({ node: n.node })}
              />
            </section>
            {v.staticPools.length > 0 ? (
              <section className="panel" data-testid="consolidation-static">
                <h2>Static NodePools</h2>
                <ul>
                  {v.staticPools
                    .filter((p) => !pool || p.nodePool === pool)
                    .map((p) => (
                      <li key={p.nodePool} data-testid="static-pool">
                        <span className="tag">{p.nodePool}</span> {p.message}{" "}
                        <span className="muted">
                          ({num(p.nodes)} of its nodes here; not blocked, nothing to fix, no saving counted)
                        </span>
                      </li>
                    ))}
                </ul>
              </section>
            ) : null}
            <section className="panel" data-testid="consolidation-fixes">
              <h2>
                Fixes <span className="muted count">({num(fixes.length)})</span>
              </h2>
              {fixes.length === 0 ? (
                <p className="empty">No fix to make for these filters.</p>
              ) : (
                <ul className="fixes">
                  {fixes.map(({ blocker, nodes }) => (
                    <li
                      key={`${blocker.reason}/${objectLabel(blocker.object)}`}
                      data-testid="fix"
                      data-reason={blocker.reason}
                    >
                      <span className="tag bad">{reasonLabel(blocker.reason)}</span>{" "}
                      <b>{objectLabel(blocker.object)}</b>{" "}
                      <span className="muted">
                        blocks {nodes.length === 1 ? "node" : `${num(nodes.length)} nodes`}{" "}
                        {nodes.slice(0, 3).join(", ")}
                        {nodes.length > 3 ? " …" : ""}
                      </span>
                      {blocker.fix ? (
                        <>
                          <div>
                            <b>{blocker.fix.title}</b>
                            {blocker.fix.detail ? (
                              <span className="muted"> — {blocker.fix.detail}</span>
                            ) : null}
                          </div>
                          {blocker.fix.kubectl ? (
                            <div className="cmd">
                              <code data-testid="fix-patch">{blocker.fix.kubectl}</code>
                              <Copy text={blocker.fix.kubectl} />
                            </div>
                          ) : null}
                        </>
                      ) : (
                        <div className="muted">{blocker.message}</div>
                      )}
                    </li>
                  ))}
                </ul>
              )}
            </section>
          </>
        );
      }}
    </Loadable>
  );
}
