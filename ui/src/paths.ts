// The API paths of the first screens, built in one place: the pages ask for them, and early.ts
// starts the same requests before the pages' code has loaded (same path = the early answer).
import type { NodeSortKey } from "../../src/dashboard/dto.ts";
import { rangeQuery, seriesWindow, type RangeSpec } from "./range.ts";

/** api/v1/clusters/<id> */
export const clusterBase = (id: string): string => `api/v1/clusters/${encodeURIComponent(id)}`;

export const streamPath = (base: string): string => `${base}/stream`;

/** The overview's history chart. */
export const seriesPath = (base: string, range: RangeSpec, now: number): string =>
  `${base}/series?window=${seriesWindow(range, now)}`;

const poolQuery = (pool: string | undefined): string => (pool ? `&pool=${encodeURIComponent(pool)}` : "");

/** Most disruptions the Disruptions page lists (newest first); its counts are exact regardless. */
export const DISRUPTION_LIST_LIMIT = 1000;

/** The newest disruptions in range (a page: the counts come from disruptionCountsPath). */
export const disruptionsPath = (base: string, range: RangeSpec, now: number, pool?: string): string =>
  `${base}/disruptions?limit=${DISRUPTION_LIST_LIMIT}&${rangeQuery(range, now)}${poolQuery(pool)}`;

/** Disruptions in range counted per pool and reason by core's store: exact, however many. */
export const disruptionCountsPath = (base: string, range: RangeSpec, now: number, pool?: string): string =>
  `${base}/disruptions/counts?${rangeQuery(range, now)}${poolQuery(pool)}`;

export interface Sort {
  key: string;
  desc: boolean;
}

/** Rows the node table asks for at once: the rows in view and more than a screen either side. */
export const NODE_PAGE = 100;
/** The node table's first order: the most expensive nodes first. */
export const NODE_FIRST_SORT: Sort = { key: "cost", desc: true };

/** How core sorts each node column (age: newest first is createdAt descending). */
const SERVER_SORT: Record<string, { key: NodeSortKey; flip?: true }> = {
  name: { key: "name" },
  pool: { key: "nodePool" },
  type: { key: "instanceType" },
  capacity: { key: "capacityType" },
  zone: { key: "zone" },
  cpu: { key: "cpuUse" },
  mem: { key: "memoryUse" },
  pods: { key: "pods" },
  cost: { key: "cost" },
  price: { key: "priceSource" },
  age: { key: "createdAt", flip: true },
};

/** GET …/nodes for one window of the node table: sorted, filtered and paged by core. */
export function nodeListPath(
  base: string,
  q: { pool: string | undefined; sort: Sort; filter: string; offset: number },
): string {
  const s = SERVER_SORT[q.sort.key] ?? { key: "name" };
  const p = new URLSearchParams({
    sort: s.key,
    desc: String(s.flip ? !q.sort.desc : q.sort.desc),
    limit: String(NODE_PAGE),
    offset: String(q.offset),
  });
  if (q.pool) p.set("pool", q.pool);
  if (q.filter) p.set("q", q.filter);
  return `${base}/nodes?${p.toString()}`;
}
