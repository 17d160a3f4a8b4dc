import type { NodeDto, NodeListDto, PriceSource } from "../../../src/dashboard/dto.ts";
import type { PageCtx } from "../ctx.ts";
import { ago, bytes, cores, num, usd } from "../format.ts";
import { useJson } from "../hooks.ts";
import { Loadable } from "../Status.tsx";
import { Table, type Column } from "../Table.tsx";

/**
 * Where a node's price came from (ADR 0011), as the price column labels it: live AWS and KWOK
 * prices are exact; the shipped table and estimates are fallbacks (tagged); unknown is unpriced.
 */
export const PRICE_LABEL: Record<PriceSource, { text: string; tag: string; why: string }> = {
  live: { text: "live", tag: "", why: "live AWS price" },
  kwok: { text: "kwok", tag: "", why: "KWOK provider's price formula" },
  static: { text: "static", tag: "medium", why: "fallback: Wave's shipped price table" },
  estimate: { text: "estimate", tag: "medium", why: "fallback: estimated from the instance's size" },
  unknown: { text: "unpriced", tag: "bad", why: "no price known for this instance type" },
};

/** The price column's cell: the source tagged (fallbacks stand out) and the price's age. */
export function PriceSourceCell({ n, now }: { n: NodeDto; now: number }) {
  const l = PRICE_LABEL[n.priceSource];
  const asOf = n.priceAsOf === null ? null : Date.parse(n.priceAsOf);
  return (
    <span
      data-testid="price-source"
      data-source={n.priceSource}
      title={asOf === null ? l.why : `${l.why}, as of ${n.priceAsOf ?? ""}`}
    >
      <span className={`tag ${l.tag}`}>{l.text}</span>
      {asOf !== null && Number.isFinite(asOf) ? ` ${ago(asOf, now)}` : ""}
    </span>
  );
}

export function nodeColumns(now: number): Column<NodeDto>[] {
  return [
    {
      key: "name",
      label: "node",
      value: (n) => n.name,
      render: (n) => (
        <>
          {n.name}
          {n.warm ? <span className="tag warm">warm</span> : null}
          {n.doNotDisrupt && !n.warm ? <span className="tag">do-not-disrupt</span> : null}
          {n.ready ? null : <span className="tag bad">not ready</span>}
        </>
      ),
    },
    { key: "pool", label: "pool", value: (n) => n.nodePool },
    { key: "type", label: "type", value: (n) => n.instanceType },
    {
      key: "capacity",
      label: "capacity",
      value: (n) => n.capacityType,
      render: (n) => (
        <span className={n.capacityType === "spot" ? "spot" : "od"}>{n.capacityType ?? "—"}</span>
      ),
    },
    { key: "zone", label: "zone", value: (n) => n.zone, wide: true },
    {
      key: "cpu",
      label: "cpu req/alloc",
      numeric: true,
      value: (n) => (n.cpu.allocatable ? n.cpu.requested / n.cpu.allocatable : 0),
      render: (n) => `${cores(n.cpu.requested)}/${cores(n.cpu.allocatable)}`,
    },
    {
      key: "mem",
      label: "mem req/alloc",
      numeric: true,
      wide: true,
      value: (n) => (n.memoryBytes.allocatable ? n.memoryBytes.requested / n.memoryBytes.allocatable : 0),
      render: (n) => `${bytes(n.memoryBytes.requested)}/${bytes(n.memoryBytes.allocatable)}`,
    },
    { key: "pods", label: "pods", numeric: true, value: (n) => n.pods, render: (n) => num(n.pods) },
    {
      key: "cost",
      label: "$/h",
      numeric: true,
      value: (n) => n.costPerHour,
      render: (n) => (
        <span title={`price source: ${PRICE_LABEL[n.priceSource].why}`}>
          {usd(n.costPerHour)}
          {PRICE_LABEL[n.priceSource].tag ? <sup className="fallback">*</sup> : null}
        </span>
      ),
    },
    {
      key: "price",
      label: "price",
      title: "where the price came from, and its age",
      value: (n) => PRICE_LABEL[n.priceSource].text,
      render: (n) => <PriceSourceCell n={n} now={now} />,
      wide: true,
    },
    {
      key: "age",
      label: "age",
      numeric: true,
      value: (n) => -(n.createdAt ?? 0),
      render: (n) => ago(n.createdAt, now),
    },
  ];
}

/** Every node (virtualized past 60 rows); a row opens the node drawer. */
export function Nodes({ ctx }: { ctx: PageCtx }) {
  const pool = ctx.route.params["pool"];
  const nodes = useJson<NodeListDto>(`${ctx.base}/nodes?limit=5000`, ctx.token, ctx.version);
  return (
    <Loadable state={nodes} what="nodes">
      {(d) => {
        const rows = pool ? d.items.filter((n) => n.nodePool === pool) : d.items;
        return (
          <Table
            label="Nodes"
            testId="node-table"
            rowTestId="node-row"
            filterLabel="filter nodes"
            columns={nodeColumns(ctx.now)}
            rows={rows}
            rowKey={(n) => n.name}
            initialSort={{ key: "cost", desc: true }}
            virtualAbove={60}
            empty={
              pool
                ? `No nodes in NodePool ${pool}.`
                : "No nodes yet: Karpenter has not launched any, or the agent has not sent them."
            }
            onRow={(n) => ctx.go({ node: n.name })}
            headingExtra={
              pool ? (
                <span className="chip">
                  pool {pool}{" "}
                  <button type="button" aria-label="clear pool filter" onClick={() => ctx.go({ params: {} })}>
                    ×
                  </button>
                </span>
              ) : null
            }
          />
        );
      }}
    </Loadable>
  );
}
