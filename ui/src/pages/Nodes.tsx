import { useCallback, useState } from "react";
import type { NodeDto, NodeListDto, PriceSource } from "../../../src/dashboard/dto.ts";
import { getJson } from "../api.ts";
import type { PageCtx } from "../ctx.ts";
import { ago, bytes, cores, num, usd } from "../format.ts";
import { useAsync, useDebounced } from "../hooks.ts";
import { Loadable } from "../Status.tsx";
import { NODE_FIRST_SORT, nodeListPath, type Sort } from "../paths.ts";
import { Table, VISIBLE, type Column } from "../Table.tsx";

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
      {n.listPricePerHour !== null ? (
        <span
          data-testid="price-overlay"
          title="Karpenter's price for this offering: a NodeOverlay changed it"
        >
          {" "}
          · {n.pricedBy} (list {usd(n.listPricePerHour)}/h)
        </span>
      ) : null}
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

/** Windows start on multiples of this, so small scrolls reuse the answer in hand. */
const NODE_STEP = 25;
/** Rows kept above the first row in view. */
const NODE_ABOVE = 30;
/** Typing pauses this long before the filter is sent. */
const FILTER_DELAY_MS = 200;

/** The first row of the window that holds the rows in view from `first`. */
export function nodeWindow(first: number): number {
  return Math.floor(Math.max(0, first - NODE_ABOVE) / NODE_STEP) * NODE_STEP;
}

/**
 * Every node, as a virtualized table whose rows core sorts, filters and pages: the page asks
 * for the window in view (NODE_PAGE rows, paths.ts), never the whole cluster; a row opens the node drawer.
 */
export function Nodes({ ctx }: { ctx: PageCtx }) {
  const pool = ctx.route.params["pool"];
  const [sort, setSort] = useState<Sort>(NODE_FIRST_SORT);
  const [filter, setFilter] = useState("");
  const q = useDebounced(filter.trim(), FILTER_DELAY_MS);
  const [first, setFirst] = useState(0);
  const offset = nodeWindow(first);
  const path = nodeListPath(ctx.base, { pool, sort, filter: q, offset });
  // The window's offset travels with its answer: until the next one arrives, rows stay where they were.
  const nodes = useAsync(
    (signal) => getJson<NodeListDto>(path, ctx.token, signal).then((list) => ({ offset, list })),
    [path, ctx.token],
    ctx.version,
  );
  const onView = useCallback((f: number) => setFirst(f), []);
  return (
    <Loadable state={nodes} what="nodes">
      {({ offset: at, list }) => (
        <Table
          label="Nodes"
          testId="node-table"
          rowTestId="node-row"
          filterLabel="filter nodes"
          columns={nodeColumns(ctx.now)}
          rows={list.items}
          remote={{
            total: list.total,
            unfiltered: list.totalBeforeQuery,
            offset: at,
            rows: list.items,
            sort,
            onSort: setSort,
            filter,
            onFilter: setFilter,
            onView,
          }}
          rowKey={(n) => n.name}
          virtualAbove={VISIBLE * 3}
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
      )}
    </Loadable>
  );
}
