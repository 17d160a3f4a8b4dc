// The cross-check's figures, shared by its two runs (issue 27 "one truth per figure"): the rig
// (crosscheck.e2e.test.ts: kubectl, a real Prometheus) and the embedded simulated cluster
// (crosscheck-sim.e2e.test.ts: the simulator's in-memory apiserver read in process). Each console
// page is a `PageCheck`: what Chromium shows on it, and its figures from the API, core's /metrics,
// the Grafana panels on Prometheus (rig only) and a recomputation from the apiserver's objects —
// here by hand, independent of Wave's code (no import of its figures, prices or joins). Every
// page is judged at a stable moment: the API answered the same before and after the page was read.
import { nodePoolPatchesIn, patchConflicts } from "../../src/dashboard/pool-advice.ts";
import type { Browser, Page } from "playwright-core";
import type {
  ConsolidationViewDto,
  ThrashingFixesDto,
  DisruptionCountsDto,
  NodeListDto,
  NodePoolDto,
  OverviewDto,
  SavingsDto,
  SpotViewDto,
  ThrashingDto,
  WarmupViewDto,
} from "../../src/dashboard/dto.ts";
import { DO_NOT_DISRUPT_OWNER_ANNOTATION, DO_NOT_DISRUPT_OWNER_VALUE } from "../../src/objects/wave.ts";
import { DO_NOT_DISRUPT_ANNOTATION } from "../../src/objects/karpenter.ts";
import { bytes, cores, duration, num, pct, usd } from "../../ui/src/format.ts";
import { api as siteApi, cl, open, type Site } from "./console-pages.ts";
import { disagreements, parseExposition, sourcesOf, sumOf, type Figure, type Sample } from "./crosscheck.ts";
import { waitFor, type KubeObject } from "./harness.ts";

const L = {
  pool: "karpenter.sh/nodepool",
  ct: "karpenter.sh/capacity-type",
  it: "node.kubernetes.io/instance-type",
  zone: "topology.kubernetes.io/zone",
} as const;

// ---- the apiserver's objects, recomputed by hand ----

/** The apiserver's objects at one moment (kubectl on the rig, the MemoryKube in process on the simulator). */
export interface Objects {
  nodes: KubeObject[];
  nodeClaims: KubeObject[];
  pods: KubeObject[];
  replicaSets: KubeObject[];
  spotPolicies: KubeObject[];
  /** Karpenter's Events: read only where they cover every disruption core counted (the simulator). */
  events?: KubeObject[];
}

/** An instance's hourly price from the provider's own table (KWOK formula, EC2 table), independent of Wave's. */
export type PriceOf = (
  instanceType: string,
  capacityType: string,
  zone: string | undefined,
) => number | undefined;

interface Machine {
  pool: string;
  capacityType: string;
  instanceType: string | undefined;
  zone: string | undefined;
  vcpu: number;
  warm: boolean;
}

type Res = Record<string, string> | undefined;
const labelsOf = (o: KubeObject | undefined): Record<string, string> => o?.metadata.labels ?? {};
const statusOf = (o: KubeObject | undefined): Record<string, Res> =>
  (o?.status as Record<string, Res> | undefined) ?? {};
const SUFFIX: Record<string, number> = {
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
};

/** A Kubernetes quantity (cores or bytes); undefined → 0. */
export function quantity(q: string | number | undefined): number {
  if (q === undefined) return 0;
  const m = /^([+-]?[\d.]+(?:[eE][+-]?\d+)?)([a-zA-Z]*)$/.exec(String(q).trim());
  if (!m?.[1]) throw new Error(`not a quantity: ${String(q)}`);
  const unit = m[2] ?? "";
  if (unit !== "" && SUFFIX[unit] === undefined) throw new Error(`unknown quantity suffix: ${String(q)}`);
  return Number(m[1]) * (SUFFIX[unit] ?? 1);
}

/** Every machine the cluster pays for: each NodeClaim with its Node, plus Nodes no NodeClaim owns. */
function machinesOf(nodes: readonly KubeObject[], claims: readonly KubeObject[]): Machine[] {
  const byName = new Map(nodes.map((n) => [n.metadata.name, n]));
  const byProvider = new Map(
    nodes.map((n) => [(n.spec as { providerID?: string } | undefined)?.providerID ?? "", n]),
  );
  const claimed = new Set<string>();
  const of = (nc: KubeObject | undefined, node: KubeObject | undefined): Machine => {
    const lbl = { ...labelsOf(nc), ...labelsOf(node) };
    const cpu = (k: string): number => quantity(statusOf(node)[k]?.["cpu"] ?? statusOf(nc)[k]?.["cpu"]);
    return {
      pool: lbl[L.pool] ?? "(none)",
      capacityType: lbl[L.ct] ?? "on-demand",
      instanceType: lbl[L.it],
      zone: lbl[L.zone],
      vcpu: Math.max(cpu("capacity"), cpu("allocatable")),
      warm: [nc, node].some((o) => o?.metadata.annotations?.[DO_NOT_DISRUPT_OWNER_ANNOTATION] === "warmup"),
    };
  };
  const out: Machine[] = [];
  for (const nc of claims) {
    const st = nc.status as { nodeName?: string; providerID?: string } | undefined;
    const node = byName.get(st?.nodeName ?? "\u0000") ?? byProvider.get(st?.providerID ?? "\u0000");
    if (node) claimed.add(node.metadata.name);
    out.push(of(nc, node));
  }
  for (const n of nodes) if (!claimed.has(n.metadata.name)) out.push(of(undefined, n));
  return out;
}

interface PodSpec {
  nodeName?: string;
  containers?: { resources?: { requests?: Record<string, string> } }[];
  initContainers?: { resources?: { requests?: Record<string, string> }; restartPolicy?: string }[];
  overhead?: Record<string, string>;
}
const specOf = (p: KubeObject): PodSpec => (p.spec as PodSpec | undefined) ?? {};
const terminal = (p: KubeObject): boolean => p.status?.phase === "Succeeded" || p.status?.phase === "Failed";

/** A pod's requests of one resource as the scheduler sums them: containers, then the larger init step, plus overhead. */
function requestOf(p: KubeObject, r: "cpu" | "memory"): number {
  const s = specOf(p);
  let sum = 0;
  for (const c of s.containers ?? []) sum += quantity(c.resources?.requests?.[r]);
  let sidecars = 0;
  let init = 0;
  for (const c of s.initContainers ?? []) {
    const own = quantity(c.resources?.requests?.[r]);
    if (c.restartPolicy === "Always") {
      sum += own;
      sidecars += own;
      init = Math.max(init, sidecars);
    } else init = Math.max(init, own + sidecars);
  }
  return Math.max(sum, init) + quantity(s.overhead?.[r]);
}

export interface Recomputed {
  nodes: number;
  cost: number;
  spotSavings: number;
  spotRatio: { nodes: number; vcpu: number; cost: number };
  warmNodes: number;
  requested: { cpu: number; memoryBytes: number };
  allocatable: { cpu: number; memoryBytes: number };
  pool: (p: string) => { nodes: number; cost: number; spotCost: number };
  /** The Spot page's totals: live pods of workloads with a SpotPolicy, and their share of their spot nodes' savings. */
  spot: { workloads: number; pods: number; onDemand: number; spot: number; savedPerHour: number };
  /** NodeClaims a DisruptionTerminating Event named since `from` (when the Events were read). */
  disruptions?: number;
  /** The Consolidation page's figures that need no scheduling model (consolidationOf). */
  consolidation: { nodes: number; doNotDisruptPod: number; waveWarm: number };
}

/**
 * Karpenter's nodes as the Consolidation page counts them (a pool label or a NodeClaim, neither
 * being deleted), and how many of them a do-not-disrupt pod or Wave's warm mark holds.
 */
function consolidationOf(o: Objects): Recomputed["consolidation"] {
  const claimOf = new Map<string, KubeObject>();
  const byProvider = new Map(
    o.nodes.map((n) => [(n.spec as { providerID?: string } | undefined)?.providerID ?? "", n.metadata.name]),
  );
  for (const nc of o.nodeClaims) {
    const st = nc.status as { nodeName?: string; providerID?: string } | undefined;
    const name = st?.nodeName ?? byProvider.get(st?.providerID ?? "\u0000");
    if (name) claimOf.set(name, nc);
  }
  const held = new Set<string>();
  for (const p of o.pods)
    if (
      p.metadata.annotations?.[DO_NOT_DISRUPT_ANNOTATION] === "true" &&
      !terminal(p) &&
      !p.metadata.deletionTimestamp
    )
      held.add(specOf(p).nodeName ?? "");
  const out = { nodes: 0, doNotDisruptPod: 0, waveWarm: 0 };
  for (const n of o.nodes) {
    const nc = claimOf.get(n.metadata.name);
    if (!nc && labelsOf(n)[L.pool] === undefined && labelsOf(nc)[L.pool] === undefined) continue;
    if (n.metadata.deletionTimestamp || nc?.metadata.deletionTimestamp) continue;
    out.nodes++;
    if (held.has(n.metadata.name)) out.doNotDisruptPod++;
    const ann = { ...(nc?.metadata.annotations ?? {}), ...(n.metadata.annotations ?? {}) };
    if (
      ann[DO_NOT_DISRUPT_ANNOTATION] === "true" &&
      ann[DO_NOT_DISRUPT_OWNER_ANNOTATION] === DO_NOT_DISRUPT_OWNER_VALUE
    )
      out.waveWarm++;
  }
  return out;
}

/** NodeClaims Karpenter's DisruptionTerminating Events name since `from` (each NodeClaim once). */
function disruptionsSince(events: readonly KubeObject[], from: number): number {
  const named = new Set<string>();
  for (const e of events) {
    const ev = e as KubeObject & {
      reason?: string;
      involvedObject?: { kind?: string; name?: string };
      lastTimestamp?: string;
      eventTime?: string;
      firstTimestamp?: string;
    };
    if (ev.reason !== "DisruptionTerminating" || ev.involvedObject?.kind !== "NodeClaim") continue;
    const at = Date.parse(ev.lastTimestamp ?? ev.eventTime ?? ev.firstTimestamp ?? "");
    if (at >= from) named.add(ev.involvedObject.name ?? "");
  }
  return named.size;
}

/** The workload a pod belongs to (a Deployment through its ReplicaSet), as namespace/Kind/name. */
type OwnerRef = { kind: string; name: string; controller?: boolean };
const ownersOf = (o: KubeObject): OwnerRef[] => (o.metadata.ownerReferences as OwnerRef[] | undefined) ?? [];

function workloadOf(p: KubeObject, rsOwner: ReadonlyMap<string, string>): string | undefined {
  const refs = ownersOf(p);
  const ref = refs.find((r) => r.controller);
  if (!ref) return undefined;
  const ns = p.metadata.namespace ?? "";
  if (ref.kind === "ReplicaSet") {
    const dep = rsOwner.get(`${ns}/${ref.name}`);
    return dep ? `${ns}/Deployment/${dep}` : `${ns}/ReplicaSet/${ref.name}`;
  }
  return `${ns}/${ref.kind}/${ref.name}`;
}

export function recompute(o: Objects, price: PriceOf, from = hourAgo()): Recomputed {
  const ms = machinesOf(o.nodes, o.nodeClaims);
  const sum = <T>(xs: readonly T[], f: (x: T) => number): number => xs.reduce((s, x) => s + f(x), 0);
  const cost = (m: Machine): number =>
    m.instanceType ? (price(m.instanceType, m.capacityType, m.zone) ?? 0) : 0;
  const onDemand = (m: Machine): number =>
    m.instanceType ? (price(m.instanceType, "on-demand", m.zone) ?? 0) : 0;
  const spot = ms.filter((m) => m.capacityType === "spot");
  const total = sum(ms, cost);
  const frac = (a: number, b: number): number => (b === 0 ? 0 : a / b);

  // Requested and allocatable over the Nodes: non-terminal pods bound to each.
  const nodeNames = new Set(o.nodes.map((n) => n.metadata.name));
  const bound = o.pods.filter((p) => nodeNames.has(specOf(p).nodeName ?? "\u0000") && !terminal(p));
  const alloc = (r: "cpu" | "memory"): number =>
    sum(o.nodes, (n) => quantity(statusOf(n)["allocatable"]?.[r]));

  // The Spot page: pods of the workloads a SpotPolicy names (not Wave's own, not DaemonSets').
  const rsOwner = new Map<string, string>();
  for (const rs of o.replicaSets) {
    const dep = ownersOf(rs).find((r) => r.controller && r.kind === "Deployment");
    if (dep) rsOwner.set(`${rs.metadata.namespace ?? ""}/${rs.metadata.name}`, dep.name);
  }
  const policed = new Set(
    o.spotPolicies.map((sp) => {
      const t = (sp.spec as { targetRef: { kind: string; name: string } }).targetRef;
      return `${sp.metadata.namespace ?? ""}/${t.kind}/${t.name}`;
    }),
  );
  const nodesByName = new Map(o.nodes.map((n) => [n.metadata.name, n]));
  const managed = o.pods.filter((p) => {
    const l = labelsOf(p);
    if (p.metadata.deletionTimestamp !== undefined || terminal(p)) return false;
    if (l["wave.sh/warmup"] === "true" || l["wave.sh/prepull"] === "true") return false;
    const w = workloadOf(p, rsOwner);
    return w !== undefined && policed.has(w);
  });
  const sp = { workloads: policed.size, pods: managed.length, onDemand: 0, spot: 0, savedPerHour: 0 };
  for (const p of managed) {
    const node = nodesByName.get(specOf(p).nodeName ?? "\u0000");
    const ct = labelsOf(node)[L.ct];
    if (!node || ct === undefined) continue;
    if (ct !== "spot") {
      sp.onDemand++;
      continue;
    }
    sp.spot++;
    const type = labelsOf(node)[L.it];
    const zone = labelsOf(node)[L.zone];
    const now = type ? price(type, "spot", zone) : undefined;
    const od = type ? price(type, "on-demand", zone) : undefined;
    const st = statusOf(node);
    const allocCpu = quantity((st["allocatable"] ?? st["capacity"])?.["cpu"]);
    if (now !== undefined && od !== undefined && allocCpu > 0)
      sp.savedPerHour += (od - now) * Math.min(1, requestOf(p, "cpu") / allocCpu);
  }

  return {
    nodes: ms.length,
    cost: total,
    spotSavings: sum(spot, (m) => onDemand(m) - cost(m)),
    spotRatio: {
      nodes: frac(spot.length, ms.length),
      vcpu: frac(
        sum(spot, (m) => m.vcpu),
        sum(ms, (m) => m.vcpu),
      ),
      cost: frac(sum(spot, cost), total),
    },
    warmNodes: ms.filter((m) => m.warm).length,
    requested: {
      cpu: sum(bound, (p) => requestOf(p, "cpu")),
      memoryBytes: sum(bound, (p) => requestOf(p, "memory")),
    },
    allocatable: { cpu: alloc("cpu"), memoryBytes: alloc("memory") },
    pool: (p) => {
      const xs = ms.filter((m) => m.pool === p);
      return {
        nodes: xs.length,
        cost: sum(xs, cost),
        spotCost: sum(
          xs.filter((m) => m.capacityType === "spot"),
          cost,
        ),
      };
    },
    spot: sp,
    ...(o.events ? { disruptions: disruptionsSince(o.events, from) } : {}),
    consolidation: consolidationOf(o),
  };
}

// ---- one moment: every source ----

/** The 1 h range the pages ask for: from the minute an hour ago (ui/src/range.ts). */
export const hourAgo = (): number => Math.floor((Date.now() - 3_600_000) / 60_000) * 60_000;

export interface ApiRead {
  o: OverviewDto;
  pools: NodePoolDto[];
  nodeTotal: number;
  counts: DisruptionCountsDto;
  thrashing: ThrashingDto[];
  warmup: WarmupViewDto;
  spot: SpotViewDto;
  savings: SavingsDto;
  consolidation: ConsolidationViewDto;
  thrashingFixes: ThrashingFixesDto[];
}

export async function readApi(site: Site): Promise<ApiRead> {
  const api = <T>(p: string): Promise<T> => siteApi<T>(site, cl(site, p));
  const from = hourAgo();
  const to = Math.floor(Date.now() / 60_000) * 60_000;
  return {
    o: await api<OverviewDto>("overview"),
    pools: await api<NodePoolDto[]>("nodepools"),
    nodeTotal: (await api<NodeListDto>("nodes?limit=1")).total,
    counts: await api<DisruptionCountsDto>(`disruptions/counts?from=${from}`),
    thrashing: await api<ThrashingDto[]>("thrashing"),
    warmup: await api<WarmupViewDto>(`warmup?from=${from}`),
    spot: await api<SpotViewDto>(`spot-placement?from=${from}`),
    savings: await api<SavingsDto>(`savings?from=${to - 3_600_000}&to=${to}`),
    consolidation: await api<ConsolidationViewDto>("consolidation"),
    thrashingFixes: await api<ThrashingFixesDto[]>("thrashing/fixes"),
  };
}

/** Core's /metrics, as Prometheus gets it. */
export async function readMetrics(site: Site): Promise<Sample[]> {
  const res = await fetch(new URL("metrics", site.url), {
    headers: { authorization: `Bearer ${site.viewer}` },
  });
  if (res.status !== 200) throw new Error(`GET /metrics: ${res.status}`);
  return parseExposition(await res.text());
}

/** The Grafana dashboard's panels evaluated on Prometheus (the rig's run): a panel's only query, for the cluster (and a pool). */
export interface Panels {
  value(title: string, nodepool?: string): Promise<number | undefined>;
  /** The series of the panel's query whose labels include `match`. */
  pick(title: string, match: Record<string, string>, nodepool?: string): Promise<number | undefined>;
}

export interface Moment {
  a: ApiRead;
  m: Sample[];
  r: Recomputed;
  /** Absent on the simulated cluster (no Prometheus scrapes it). */
  panels?: Panels;
  cluster: string;
  countersCoverRange: boolean;
}

/** The world a cross-check runs in: where core is, how to read the apiserver, whose prices. */
export interface World {
  site: Site;
  objects(): Promise<Objects>;
  price: PriceOf;
  /** Prometheus's panels at a scrape after /metrics was read (rig only). */
  panels?: () => Promise<Panels>;
  /**
   * Core started inside the pages' 1 h range (the rig's own core), so /metrics' counters since its
   * start are the range's counts. The simulated cluster's core counted a generated day.
   */
  countersCoverRange: boolean;
}

async function momentOf(w: World): Promise<Moment> {
  const a = await readApi(w.site);
  const m = await readMetrics(w.site);
  const r = recompute(await w.objects(), w.price);
  const panels = w.panels ? await w.panels() : undefined;
  return {
    a,
    m,
    r,
    cluster: w.site.cluster,
    countersCoverRange: w.countersCoverRange,
    ...(panels ? { panels } : {}),
  };
}

/** A counter's value from /metrics, when its count since core's start is the range's. */
const counter = (x: Moment, name: string, match: Record<string, string>): Figure["others"] =>
  x.countersCoverRange ? { metrics: sumOf(x.m, name, match) } : {};

/** `others` with Prometheus's value when the world has one. */
async function withPanel(
  x: Moment,
  others: Figure["others"],
  panel: (p: Panels) => Promise<number | undefined>,
): Promise<Figure["others"]> {
  return x.panels ? { ...others, prometheus: await panel(x.panels) } : others;
}

// ---- the pages: what Chromium shows, and each page's figures ----

export interface PageCheck<S = unknown> {
  /** The console route (after #/). */
  path: string;
  /** Waits until the page shows its figures. */
  ready(page: Page): Promise<void>;
  read(page: Page): Promise<S>;
  figures(x: Moment, shown: S): Figure[] | Promise<Figure[]>;
}

const textOf = async (page: Page, sel: string): Promise<string | undefined> =>
  (
    await page
      .locator(sel)
      .first()
      .textContent({ timeout: 5000 })
      .catch(() => null)
  )?.trim() ?? undefined;
const byId = (id: string): string => `[data-testid="${id}"]`;
/** The line under a card's value (its `.sub`), the card found by its value's test id. */
const cardSub = async (page: Page, testid: string): Promise<string | undefined> =>
  (
    await page
      .locator(".card")
      .filter({ has: page.getByTestId(testid) })
      .locator(".sub")
      .textContent({ timeout: 5000 })
      .catch(() => null)
  )?.trim() ?? undefined;
/** Waits until the page shows `selector` (its figures have loaded). */
export const shows =
  (selector: string) =>
  async (page: Page): Promise<void> => {
    await page.locator(selector).first().waitFor({ timeout: 30_000 });
  };

/** A cluster figure read from the API, a /metrics gauge summed over the cluster, its Grafana panel, the recomputation and the page. */
async function clusterFigure(
  x: Moment,
  name: string,
  kind: Figure["kind"],
  api: number,
  metric: string,
  recomputed: number,
  panel: string,
  page: NonNullable<Figure["page"]>,
): Promise<Figure> {
  const metrics = sumOf(x.m, metric, { cluster: x.cluster });
  return {
    name,
    kind,
    api,
    others: await withPanel(x, { metrics, recomputed }, (p) => p.value(panel)),
    page,
  };
}

/** The Overview's cards: nodes, cost, spot ratio and the nodes' savings (scope nodes), requested/allocatable, disruptions, warm nodes. */
export const overviewPage: PageCheck<Record<string, string | undefined>> = {
  path: "overview",
  async ready(page) {
    await page.getByTestId("overview-nodes").waitFor({ timeout: 30_000 });
    await page.locator(byId("overview-disruptions")).filter({ hasNotText: "…" }).waitFor({ timeout: 30_000 });
  },
  async read(page) {
    const card = page
      .locator(".card")
      .filter({ has: page.locator(".label", { hasText: "requested / allocatable" }) });
    return {
      nodes: await textOf(page, byId("overview-nodes")),
      cost: await textOf(page, byId("overview-cost")),
      spot: await textOf(page, byId("overview-spot")),
      saves: await textOf(page, byId("overview-spot-saves")),
      savesScope: (await page.getByTestId("overview-spot-saves").getAttribute("title")) ?? undefined,
      usage: (await card.locator(".value").textContent())?.trim(),
      usageSub: (await card.locator(".sub").textContent())?.trim(),
      disruptions: await textOf(page, byId("overview-disruptions")),
      warm: await textOf(page, byId("overview-warm")),
      realized: await textOf(page, byId("savings-total")),
    };
  },
  async figures(x, s) {
    const { a, m, r } = x;
    const c = { cluster: x.cluster };
    const ratio = (basis: string) => (p: Panels) => p.pick("Spot ratio", { basis });
    const sub = /^(\S+)\/(\S+) cores · (.+)\/(.+)$/.exec(s["usageSub"] ?? "") ?? [];
    const res = (type: string, r2: string): number | undefined =>
      sumOf(m, `wave_nodepool_resource_${type}`, { ...c, resource_type: r2 });
    const sv = a.savings.total;
    return [
      await clusterFigure(x, "cluster nodes", "count", a.o.nodes, "wave_nodes", r.nodes, "Nodes", {
        shown: s["nodes"],
        format: num,
      }),
      await clusterFigure(
        x,
        "cluster cost per hour",
        "money",
        a.o.costPerHour,
        "wave_nodepool_cost_per_hour_dollars",
        r.cost,
        "Cost per hour",
        { shown: s["cost"], format: usd },
      ),
      ...(await Promise.all(
        (["nodes", "vcpu", "cost"] as const).map(async (basis): Promise<Figure> => ({
          name: `spot ratio (${basis})`,
          kind: "ratio",
          api: a.o.spotRatio[basis],
          others: await withPanel(
            x,
            { metrics: sumOf(m, "wave_spot_ratio", { ...c, basis }), recomputed: r.spotRatio[basis] },
            ratio(basis),
          ),
          ...(basis === "nodes" ? { page: { shown: s["spot"], format: pct } } : {}),
        })),
      )),
      await clusterFigure(
        x,
        "spot savings per hour (scope nodes)",
        "money",
        a.o.spotSavingsPerHour,
        "wave_nodepool_spot_savings_per_hour_dollars",
        r.spotSavings,
        "Spot savings per hour by pool",
        { shown: s["saves"], format: (n) => `nodes save ${usd(n)}/h` },
      ),
      {
        name: "overview savings labelled with its scope (nodes)",
        kind: "count",
        api: 1,
        others: {},
        // ui/src/Savings.tsx SAVINGS_SCOPE: each savings figure says its scope where it is shown.
        page: {
          shown: s["savesScope"]?.startsWith("scope nodes:") ? "labelled" : s["savesScope"],
          format: () => "labelled",
        },
      },
      // The card's sub-line: requested/allocatable cores, then memory.
      ...(["requested", "allocatable"] as const).flatMap((use, i): Figure[] => [
        {
          name: `${use} cores`,
          kind: "ratio",
          api: a.o[use].cpu,
          others: { metrics: res(use, "cpu"), recomputed: r[use].cpu },
          page: { shown: sub[1 + i], format: cores },
        },
        {
          name: `${use} memory bytes`,
          kind: "count",
          api: a.o[use].memoryBytes,
          others: { metrics: res(use, "memory"), recomputed: r[use].memoryBytes },
          page: { shown: sub[3 + i], format: bytes },
        },
      ]),
      {
        name: "requested / allocatable cpu",
        kind: "ratio",
        api: a.o.allocatable.cpu ? a.o.requested.cpu / a.o.allocatable.cpu : 0,
        others: { recomputed: r.allocatable.cpu ? r.requested.cpu / r.allocatable.cpu : 0 },
        page: { shown: s["usage"], format: (n) => `${pct(a.o.allocatable.cpu ? n : null)} cpu` },
      },
      {
        name: "disruptions in the last hour (cluster)",
        kind: "count",
        api: a.counts.total,
        // Not Prometheus: another lane's pool may be disrupted before core's first scrape of it.
        others: {
          ...counter(x, "wave_disruptions_total", c),
          ...(r.disruptions !== undefined ? { recomputed: r.disruptions } : {}),
        },
        page: { shown: s["disruptions"], format: num },
      },
      await clusterFigure(
        x,
        "warm nodes (cluster)",
        "count",
        a.o.warmup.warmNodes,
        "wave_warmup_warm_nodes",
        r.warmNodes,
        "Warm nodes",
        { shown: s["warm"], format: num },
      ),
      {
        name: "realized savings over the last hour (scope nodes)",
        kind: "money",
        api: sv.savedUsd,
        others: {},
        page: {
          // No history in the range yet: the page says so instead of a total.
          shown: s["realized"] ?? "none",
          format: () =>
            a.savings.pools.length === 0
              ? "none"
              : `${usd(sv.savedUsd)} saved (${pct(sv.savedShare)}) — ${usd(sv.actualUsd)} spent vs ${usd(sv.onDemandUsd)} all on-demand`,
        },
      },
    ];
  },
};

/** What may follow a pool's name in its name cell: its tags (ui/src/pages/NodePools.tsx). */
const TAGS = /^(thrashing)?([\d,]+ warm)?$/;

/** The NodePools table: each of `pools`' nodes, cost and spot cost (the rig: the test's own pools; the simulator: every pool). */
export function poolsPage(
  pools: () => readonly string[],
): PageCheck<Map<string, Record<string, string | undefined>>> {
  return {
    path: "nodepools",
    ready: shows(byId("pool-row")),
    async read(page) {
      const heads = (await page.locator("[data-testid=pool-table] th").allTextContents()).map((h) =>
        h.trim(),
      );
      // A row's name cell is the pool's name, then its tags ("thrashing", "2 warm").
      const rows = await Promise.all(
        (await page.getByTestId("pool-row").all()).map(async (r) =>
          (await r.locator("td").allTextContents()).map((c) => c.trim()),
        ),
      );
      const out = new Map<string, Record<string, string | undefined>>();
      for (const p of pools()) {
        const named = (cell: string | undefined): boolean =>
          cell?.startsWith(p) === true && TAGS.test(cell.slice(p.length));
        const cells = rows.find((c) => named(c[0])) ?? [];
        const col = (label: string): string | undefined => cells[heads.findIndex((h) => h.startsWith(label))];
        out.set(p, { nodes: col("nodes"), cost: col("$/h"), spotCost: col("spot $/h") });
      }
      return out;
    },
    async figures(x, shown) {
      const out: Figure[] = [];
      for (const name of pools()) {
        const pool = x.a.pools.find((p) => p.name === name);
        const pw = { cluster: x.cluster, nodepool: name };
        const rp = x.r.pool(name);
        const s = shown.get(name) ?? {};
        // Nodes and cost; a pool without machines has no series (Prometheus's 0).
        const rows = [
          ["nodes", "count", pool?.nodes, "wave_nodes", "Nodes", num, rp.nodes],
          [
            "cost per hour",
            "money",
            pool?.costPerHour,
            "wave_nodepool_cost_per_hour_dollars",
            "Cost per hour",
            usd,
            rp.cost,
          ],
        ] as const;
        for (const [what, kind, api, metric, title, format, recomputed] of rows)
          out.push({
            name: `pool ${name}: ${what}`,
            kind,
            api: api ?? NaN,
            others: await withPanel(
              x,
              { metrics: sumOf(x.m, metric, pw) ?? 0, recomputed },
              async (p) => (await p.value(title, name)) ?? 0,
            ),
            page: { shown: s[what === "nodes" ? "nodes" : "cost"], format },
          });
        out.push({
          name: `pool ${name}: spot cost per hour`,
          kind: "money",
          api: pool?.costByCapacityType.spot ?? 0,
          others: await withPanel(
            x,
            {
              metrics:
                sumOf(x.m, "wave_nodepool_cost_per_hour_dollars", { ...pw, capacity_type: "spot" }) ?? 0,
              recomputed: rp.spotCost,
            },
            async (p) =>
              (await p.pick("Cost per hour by pool and capacity type", { capacity_type: "spot" }, name)) ?? 0,
          ),
          page: { shown: s["spotCost"], format: usd },
        });
      }
      return out;
    },
  };
}

/** A page whose figure is its table's count, shown in the table's heading as "(n)". */
function headingCount(
  path: string,
  table: string,
  figure: (x: Moment) => Omit<Figure, "page">,
): PageCheck<string | undefined> {
  const sel = `[data-testid=${table}] h2 .count`;
  return {
    path,
    ready: shows(sel),
    async read(page) {
      return (await textOf(page, sel))?.replace(/^\((.*)\)$/, "$1");
    },
    figures: (x, shown) => [{ ...figure(x), page: { shown, format: num } }],
  };
}

/** The node table's row count (every machine: NodeClaims joined to Nodes). */
export const nodesPage = headingCount("nodes", "node-table", (x) => ({
  name: "node table rows",
  kind: "count",
  api: x.a.nodeTotal,
  others: { recomputed: x.r.nodes },
}));

/** The Disruptions page's exact count over the last hour (cluster). */
export const disruptionsPage = headingCount("disruptions?range=1h", "disruption-counts", (x) => ({
  name: "disruption counts, last hour (Disruptions page)",
  kind: "count",
  api: x.a.counts.total,
  others: {
    ...counter(x, "wave_disruptions_total", { cluster: x.cluster }),
    ...(x.r.disruptions !== undefined ? { recomputed: x.r.disruptions } : {}),
  },
}));

/** The Thrashing page's alerts: the pools flagged. */
export const thrashingPage: PageCheck<number> = {
  path: "thrashing",
  ready: shows(`${byId("no-thrashing")}, ${byId("thrashing-alert")}`),

  read: (page) => page.getByTestId("thrashing-alert").count(),
  async figures(x, shown) {
    return [
      {
        name: "thrashing pools flagged",
        kind: "count",
        api: x.a.thrashing.filter((t) => t.flagged).length,
        others: await withPanel(
          x,
          { metrics: sumOf(x.m, "wave_nodepool_thrashing", { cluster: x.cluster }) },
          (p) => p.value("Thrashing pools"),
        ),
        page: { shown: String(shown), format: String },
      },
    ];
  },
};

/**
 * What the rig recomputes of a warmup pool: hits from pods on warm nodes. Time saved is compared
 * across page, API, /metrics and Grafana: core computed each hit's share once, when it stored it.
 */
export interface WarmupRecompute {
  hits(pool: string): Promise<number>;
  /**
   * Also judge each pool's warm cost (page = API = /metrics = Grafana). Only where no warm node is
   * in flight while the page is read: a warm node's cost grows by the second, and core re-reads
   * its gauge's window every 30 s (the simulated cluster always has one warming).
   */
  warmCost?: boolean;
}

/** The Warmup page, per pool of `pools`: hits, misses, time saved (page = API = /metrics = Grafana). */
export function warmupPage(
  pools: () => readonly string[],
  recomputed?: WarmupRecompute,
): PageCheck<Map<string, Record<string, string | undefined>>> {
  return {
    path: "warmup",
    ready: shows(byId("warmup-pool")),
    async read(page) {
      const out = new Map<string, Record<string, string | undefined>>();
      for (const p of pools()) {
        const sec = page.locator(`[data-testid=warmup-pool][data-pool="${p}"]`);
        const t = async (id: string): Promise<string | undefined> =>
          (
            await sec
              .getByTestId(id)
              .textContent({ timeout: 5000 })
              .catch(() => null)
          )?.trim();
        out.set(p, {
          hits: await t("pool-hits"),
          timeSaved: await t("pool-time-saved"),
          misses: await t("pool-misses"),
          warmCost: await t("pool-warm-cost"),
        });
      }
      return out;
    },
    async figures(x, shown) {
      const out: Figure[] = [];
      for (const name of pools()) {
        const wp = x.a.warmup.pools.find((p) => p.nodePool === name);
        const pw = { cluster: x.cluster, nodepool: name };
        const s = shown.get(name) ?? {};
        const hits = recomputed ? await recomputed.hits(name) : undefined;
        out.push(
          {
            name: `pool ${name}: warmup hits`,
            kind: "count",
            api: wp?.hits ?? NaN,
            others: await withPanel(
              x,
              {
                ...counter(x, "wave_warmup_hits_total", pw),
                ...(hits !== undefined ? { recomputed: hits } : {}),
              },
              (p) => p.value("Warmup hits, misses and expiries", name),
            ),
            page: { shown: s["hits"], format: num },
          },
          {
            name: `pool ${name}: warmup misses`,
            kind: "count",
            api: wp?.misses ?? NaN,
            others: counter(x, "wave_warmup_misses_total", pw),
            page: { shown: s["misses"], format: num },
          },
          {
            name: `pool ${name}: warmup time saved`,
            kind: "seconds",
            api: wp?.timeSavedSeconds ?? NaN,
            others: await withPanel(
              x,
              {
                ...counter(x, "wave_warmup_time_saved_seconds_total", pw),
              },
              (p) => p.value("Warmup time saved", name),
            ),
            page: { shown: s["timeSaved"], format: duration },
          },
        );
        if (recomputed?.warmCost)
          out.push({
            name: `pool ${name}: warm cost`,
            kind: "money",
            api: wp?.warmCostUsd ?? NaN,
            others: await withPanel(x, { metrics: sumOf(x.m, "wave_warmup_warm_cost_dollars", pw) }, (p) =>
              p.pick("Warm cost (24 h)", { nodepool: name }),
            ),
            page: { shown: s["warmCost"], format: usd },
          });
      }
      return out;
    },
  };
}

/** The Spot page's totals: managed pods, their on-demand/spot split, the workloads' savings (scope workloads). */
export const spotPage: PageCheck<Record<string, string | undefined>> = {
  path: "spot?range=1h",
  ready: shows(byId("spot-total-pods")),
  async read(page) {
    return {
      pods: await textOf(page, byId("spot-total-pods")),
      split: await textOf(page, byId("spot-total-split")),
      saved: await textOf(page, byId("spot-total-saved")),
      savedScope: await cardSub(page, "spot-total-saved"),
      fallbacks: await textOf(page, byId("spot-total-fallbacks")),
      late: await textOf(page, byId("spot-total-late-answers")),
      repairs: await textOf(page, byId("spot-total-repairs")),
    };
  },
  figures(x, s) {
    const t = x.a.spot.totals;
    const c = { cluster: x.cluster };
    const split = /^(\S+) \/ (\S+)$/.exec(s["split"] ?? "") ?? [];
    const placed = (ct: string): number =>
      sumOf(x.m, "wave_spot_placement_pods", { ...c, capacity_type: ct }) ?? 0;
    return [
      {
        name: "spot: workloads with a policy",
        kind: "count",
        api: t.workloads,
        others: { recomputed: x.r.spot.workloads },
      },
      {
        name: "spot: managed pods",
        kind: "count",
        api: t.pods,
        others: { metrics: sumOf(x.m, "wave_spot_placement_pods", c) ?? 0, recomputed: x.r.spot.pods },
        page: { shown: s["pods"], format: num },
      },
      {
        name: "spot: managed pods on on-demand",
        kind: "count",
        api: t.onDemand,
        others: { metrics: placed("on-demand"), recomputed: x.r.spot.onDemand },
        page: { shown: split[1], format: num },
      },
      {
        name: "spot: managed pods on spot",
        kind: "count",
        api: t.spot,
        others: { metrics: placed("spot"), recomputed: x.r.spot.spot },
        page: { shown: split[2], format: num },
      },
      {
        name: "spot: workloads' savings per hour (scope workloads)",
        kind: "money",
        api: t.savedPerHour,
        others: { recomputed: x.r.spot.savedPerHour },
        page: { shown: s["saved"], format: (n) => `${usd(n)}/h` },
      },
      {
        name: "spot page savings labelled with its scope (workloads, and the Overview's nodes)",
        kind: "count",
        api: 1,
        others: {},
        page: {
          shown:
            s["savedScope"]?.startsWith("scope workloads:") && s["savedScope"].includes("scope nodes:")
              ? "labelled"
              : s["savedScope"],
          format: () => "labelled",
        },
      },
      {
        name: "spot: fallbacks in range",
        kind: "count",
        api: t.fallbacks,
        others: {},
        page: { shown: s["fallbacks"], format: num },
      },
      {
        name: "spot: late answers in range",
        kind: "count",
        api: t.lateAnswers,
        others: {},
        page: { shown: s["late"], format: num },
      },
      {
        name: "spot: self-heal actions in range",
        kind: "count",
        api: t.repairs,
        others: {},
        page: { shown: s["repairs"], format: num },
      },
    ];
  },
};

/** The Consolidation page's cards: Karpenter's nodes, the blocked ones and what consolidating them would save. */
export const consolidationPage: PageCheck<Record<string, string | undefined>> = {
  path: "consolidation",
  ready: shows(byId("consolidation-blocked")),
  async read(page) {
    return {
      blocked: await textOf(page, byId("consolidation-blocked")),
      cost: await textOf(page, byId("consolidation-cost")),
      nodes: /^of (\S+) Karpenter nodes/.exec((await cardSub(page, "consolidation-blocked")) ?? "")?.[1],
    };
  },
  figures(x, s) {
    const v = x.a.consolidation;
    const c = { cluster: x.cluster };
    // Nodes a blocker of this reason holds (saving or not), and the blocked ones per reason.
    const byReason = (reason: string) => ({
      held: v.items.filter((n) => n.blockers.some((b) => b.reason === reason)).length,
      api: v.byReason.find((r) => r.reason === reason)?.blockedNodes ?? 0,
      metrics: sumOf(x.m, "wave_consolidation_blocked_nodes", { ...c, reason }) ?? 0,
    });
    const dnd = byReason("do-not-disrupt-pod");
    const warm = byReason("wave-warm-node");
    // Every NodePool patch the advice paths offer: no field proposed two ways (issue 43).
    const conflicts = patchConflicts([
      ...nodePoolPatchesIn("thrashing", x.a.thrashingFixes),
      ...nodePoolPatchesIn("consolidation", v),
      ...nodePoolPatchesIn("warmup", x.a.warmup),
    ]);
    return [
      {
        name: "consolidation: Karpenter nodes",
        kind: "count",
        api: v.nodes,
        others: { recomputed: x.r.consolidation.nodes },
        page: { shown: s["nodes"], format: num },
      },
      {
        name: "consolidation: blocked nodes",
        kind: "count",
        api: v.blockedNodes,
        others: { metrics: sumOf(x.m, "wave_nodepool_consolidation_blocked_nodes", c) ?? 0 },
        page: { shown: s["blocked"], format: num },
      },
      {
        name: "consolidation: blocked cost per hour",
        kind: "money",
        api: v.blockedCostPerHour,
        others: { metrics: sumOf(x.m, "wave_nodepool_consolidation_blocked_cost_per_hour_dollars", c) ?? 0 },
        page: { shown: s["cost"], format: usd },
      },
      {
        name: "consolidation: blocked cost = the plan's blocked rows",
        kind: "money",
        api: v.blockedCostPerHour,
        others: { recomputed: v.items.filter((n) => n.blocked).reduce((a, n) => a + n.savingsPerHour, 0) },
      },
      {
        name: "consolidation: nodes held by a do-not-disrupt pod",
        kind: "count",
        api: dnd.held,
        others: { recomputed: x.r.consolidation.doNotDisruptPod },
      },
      {
        name: "consolidation: nodes blocked by a do-not-disrupt pod",
        kind: "count",
        api: dnd.api,
        others: { metrics: dnd.metrics },
      },
      {
        name: "consolidation: nodes Wave holds warm",
        kind: "count",
        api: warm.held,
        others: { recomputed: x.r.consolidation.waveWarm },
      },
      {
        name: "consolidation: nodes blocked by Wave's warm mark",
        kind: "count",
        api: warm.api,
        others: { metrics: warm.metrics },
      },
      {
        name: `consolidation advice: NodePool fields proposed two ways across Thrashing, Consolidation, Warmup [${conflicts.join("; ")}]`,
        kind: "count",
        api: conflicts.length,
        others: { recomputed: 0 },
      },
    ];
  },
};

/** The figures' API values, to tell whether the cluster moved while a page was read. */
const apiValues = (fs: readonly Figure[]): string => JSON.stringify(fs.map((f) => [f.name, f.api]));

/**
 * One page judged at a stable moment: opens it, then reads every source and the page, and the API
 * again, until the API answered the same before and after and every source agrees (or the time
 * runs out: the last disagreements are the error). Answers the agreeing figures.
 */
export async function crossCheckPage<S>(
  w: World,
  page: Page,
  check: PageCheck<S>,
  timeoutMs = 120_000,
): Promise<Figure[]> {
  await open(w.site, page, check.path, w.site.viewer);
  await check.ready(page);
  let last: string[] = [];
  return waitFor(
    `every source to agree on the ${check.path} page`,
    async () => {
      const x = await momentOf(w);
      const shown = await check.read(page);
      const figures = await check.figures(x, shown);
      const after = await check.figures({ ...x, a: await readApi(w.site) }, shown);
      last = disagreements(figures);
      if (apiValues(after) !== apiValues(figures))
        last = ["the cluster moved while the page was read", ...last];
      if (last.length) w.site.log(`${check.path}: ${last.join("; ")}`);
      return last.length === 0 ? figures : undefined;
    },
    { timeoutMs, intervalMs: 1000 },
  ).catch((err: unknown) => {
    throw new Error(`${err instanceof Error ? err.message : String(err)}\n${last.join("\n")}`);
  });
}

/** A page check with its shown values' type erased, so checks of several pages go in one list. */
export interface Checked {
  path: string;
  run(w: World, page: Page): Promise<Figure[]>;
}
export const checked = <S>(c: PageCheck<S>): Checked => ({
  path: c.path,
  run: (w, page) => crossCheckPage(w, page, c),
});

/** Every page of `checks` in turn in one 1440 px page; logs and answers every agreeing figure. */
export async function crossCheckPages(
  w: World,
  browser: Browser,
  checks: readonly Checked[],
): Promise<Figure[]> {
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  page.on("pageerror", (err) => w.site.log(`page error: ${err.message}`));
  const all: Figure[] = [];
  try {
    for (const c of checks) {
      const figures = await c.run(w, page);
      w.site.log(`${c.path}: ${figures.length} figures agree`);
      all.push(...figures);
    }
  } finally {
    await page.close();
  }
  for (const f of all)
    w.site.log(
      `${f.name} = ${f.api} across ${sourcesOf(f)} sources (${["api", ...Object.keys(f.others), ...(f.page ? ["page"] : [])].join(", ")})`,
    );
  return all;
}
