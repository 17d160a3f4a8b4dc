import { useMemo, useState } from "react";
import type { NodeDto } from "../../src/dashboard/dto.ts";
import { ago, bytes, cores, usd } from "./format.ts";

type SortKey =
  "name" | "nodePool" | "instanceType" | "capacityType" | "zone" | "cpu" | "memory" | "pods" | "cost" | "age";
const ROW = 28;
const VISIBLE = 20;

const keyOf: Record<SortKey, (n: NodeDto) => string | number> = {
  name: (n) => n.name,
  nodePool: (n) => n.nodePool ?? "",
  instanceType: (n) => n.instanceType ?? "",
  capacityType: (n) => n.capacityType ?? "",
  zone: (n) => n.zone ?? "",
  cpu: (n) => (n.cpu.allocatable ? n.cpu.requested / n.cpu.allocatable : 0),
  memory: (n) => (n.memoryBytes.allocatable ? n.memoryBytes.requested / n.memoryBytes.allocatable : 0),
  pods: (n) => n.pods,
  cost: (n) => n.costPerHour,
  age: (n) => -(n.createdAt ?? 0),
};

/** Sortable, filterable node table; renders only the visible rows so 5,000 nodes stay fast. */
export function NodeTable({ nodes, now }: { nodes: NodeDto[]; now: number }) {
  const [sort, setSort] = useState<{ key: SortKey; desc: boolean }>({ key: "cost", desc: true });
  const [filter, setFilter] = useState("");
  const [top, setTop] = useState(0);
  const rows = useMemo(() => {
    const f = filter.trim().toLowerCase();
    const kept = f
      ? nodes.filter((n) =>
          [n.name, n.nodePool, n.instanceType, n.capacityType, n.zone].some((v) =>
            v?.toLowerCase().includes(f),
          ),
        )
      : nodes;
    const get = keyOf[sort.key];
    return [...kept].sort((a, b) => {
      const x = get(a);
      const y = get(b);
      const c = x < y ? -1 : x > y ? 1 : 0;
      return sort.desc ? -c : c;
    });
  }, [nodes, filter, sort]);
  const first = Math.floor(top / ROW);
  const shown = rows.slice(first, first + VISIBLE + 2);
  const th = (key: SortKey, label: string) => (
    <th onClick={() => setSort((s) => ({ key, desc: s.key === key ? !s.desc : true }))} className="sortable">
      {label}
      {sort.key === key ? (sort.desc ? " ▾" : " ▴") : ""}
    </th>
  );
  return (
    <section>
      <h2>
        Nodes{" "}
        <span className="muted">
          ({rows.length === nodes.length ? nodes.length : `${rows.length} of ${nodes.length}`})
        </span>
        <input
          placeholder="filter: name, pool, type, zone…"
          value={filter}
          onChange={(e) => setFilter(e.target.value)}
          aria-label="filter nodes"
        />
      </h2>
      {nodes.length === 0 ? (
        <p className="empty">No nodes yet.</p>
      ) : (
        <div
          className="scroll"
          // Shrinks to the rows there are (a few nodes need no 20-row box), header included.
          style={{ height: ROW * (Math.max(1, Math.min(rows.length, VISIBLE)) + 1) + 2 }}
          onScroll={(e) => setTop(e.currentTarget.scrollTop)}
        >
          <table className="nodes">
            <thead>
              <tr>
                {th("name", "node")}
                {th("nodePool", "pool")}
                {th("instanceType", "type")}
                {th("capacityType", "capacity")}
                {th("zone", "zone")}
                {th("cpu", "cpu req/alloc")}
                {th("memory", "mem req/alloc")}
                {th("pods", "pods")}
                {th("cost", "$/h")}
                {th("age", "age")}
              </tr>
            </thead>
            <tbody>
              <tr style={{ height: first * ROW }} />
              {shown.map((n) => (
                <tr key={n.name} style={{ height: ROW }} data-testid="node-row">
                  <td>
                    {n.name}
                    {n.warm ? <span className="tag warm">warm</span> : null}
                    {n.doNotDisrupt ? <span className="tag">do-not-disrupt</span> : null}
                    {n.ready ? null : <span className="tag bad">not ready</span>}
                  </td>
                  <td>{n.nodePool ?? "—"}</td>
                  <td>{n.instanceType ?? "—"}</td>
                  <td className={n.capacityType === "spot" ? "spot" : "od"}>{n.capacityType ?? "—"}</td>
                  <td>{n.zone ?? "—"}</td>
                  <td>
                    {cores(n.cpu.requested)}/{cores(n.cpu.allocatable)}
                  </td>
                  <td>
                    {bytes(n.memoryBytes.requested)}/{bytes(n.memoryBytes.allocatable)}
                  </td>
                  <td>{n.pods}</td>
                  <td title={`price source: ${n.priceSource}`}>{usd(n.costPerHour)}</td>
                  <td>{ago(n.createdAt, now)}</td>
                </tr>
              ))}
              <tr style={{ height: Math.max(0, rows.length - first - shown.length) * ROW }} />
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
