// A NodePool's disruption budgets as Karpenter evaluates them (sigs.k8s.io/karpenter v1
// NodePool.GetAllowedDisruptionsByReason): each budget active now (no schedule: always; else a cron
// hit within the last `duration`, UTC) allows `nodes` (a count, or a percentage of the pool's
// nodes rounded up); the smallest active one wins. Default when a pool sets none: nodes "10%".
import type { DisruptionBudget, NodePool } from "../objects/karpenter.ts";
import type { LabelSelector } from "../objects/kube.ts";
import { parseDuration } from "./duration.ts";

export const DEFAULT_BUDGETS: readonly DisruptionBudget[] = [{ nodes: "10%" }];

const MINUTE = 60_000;

// ---- cron (5 fields, UTC, as robfig/cron's standard parser reads it) ----

const MACROS: Record<string, string> = {
  "@yearly": "0 0 1 1 *",
  "@annually": "0 0 1 1 *",
  "@monthly": "0 0 1 * *",
  "@weekly": "0 0 * * 0",
  "@daily": "0 0 * * *",
  "@midnight": "0 0 * * *",
  "@hourly": "0 * * * *",
};
const NAMES: Record<string, number> = {
  jan: 1,
  feb: 2,
  mar: 3,
  apr: 4,
  may: 5,
  jun: 6,
  jul: 7,
  aug: 8,
  sep: 9,
  oct: 10,
  nov: 11,
  dec: 12,
  sun: 0,
  mon: 1,
  tue: 2,
  wed: 3,
  thu: 4,
  fri: 5,
  sat: 6,
};

interface CronField {
  values: Set<number>;
  star: boolean;
}
export interface Cron {
  minute: CronField;
  hour: CronField;
  dom: CronField;
  month: CronField;
  dow: CronField;
}

function field(text: string, lo: number, hi: number): CronField {
  const values = new Set<number>();
  const num = (s: string): number => {
    const v = NAMES[s.toLowerCase()] ?? Number(s);
    if (!Number.isInteger(v)) throw new Error(`cron: bad value "${s}"`);
    return v;
  };
  for (const part of text.split(",")) {
    const [range = "", stepText] = part.split("/");
    const step = stepText === undefined ? 1 : Number(stepText);
    if (!Number.isInteger(step) || step < 1) throw new Error(`cron: bad step in "${part}"`);
    let a = lo;
    let b = hi;
    if (range !== "*" && range !== "?") {
      const [x = "", y] = range.split("-");
      a = num(x);
      b = y === undefined ? (stepText === undefined ? a : hi) : num(y);
    }
    if (a < lo || b > hi || a > b) throw new Error(`cron: "${part}" out of ${lo}-${hi}`);
    for (let v = a; v <= b; v += step) values.add(v);
  }
  // Sunday may be written 7.
  if (hi === 7 && values.has(7)) values.add(0);
  return { values, star: text === "*" || text === "?" };
}

/** Parses a 5-field cron (or @daily, …); throws on anything else. */
export function parseCron(spec: string): Cron {
  const s = MACROS[spec.trim()] ?? spec.trim();
  const f = s.split(/\s+/);
  if (f.length !== 5) throw new Error(`cron: expected 5 fields in "${spec}"`);
  return {
    minute: field(f[0] ?? "", 0, 59),
    hour: field(f[1] ?? "", 0, 23),
    dom: field(f[2] ?? "", 1, 31),
    month: field(f[3] ?? "", 1, 12),
    dow: field(f[4] ?? "", 0, 7),
  };
}

/** Whether the cron fires at the minute starting at `ms` (UTC). */
export function cronFires(c: Cron, ms: number): boolean {
  const d = new Date(ms);
  if (!c.minute.values.has(d.getUTCMinutes()) || !c.hour.values.has(d.getUTCHours())) return false;
  if (!c.month.values.has(d.getUTCMonth() + 1)) return false;
  const dom = c.dom.values.has(d.getUTCDate());
  const dow = c.dow.values.has(d.getUTCDay());
  // robfig/cron: when either day field is *, both must match; else either.
  return c.dom.star || c.dow.star ? dom && dow : dom || dow;
}

/** The last fire at or before `ms` within `lookbackMs`, or undefined. */
export function lastFire(c: Cron, ms: number, lookbackMs: number): number | undefined {
  const start = Math.floor(ms / MINUTE) * MINUTE;
  for (let t = start; t > ms - lookbackMs; t -= MINUTE) if (cronFires(c, t)) return t;
  return undefined;
}

/** The next fire after `ms` within `horizonMs`, or undefined. */
export function nextFire(c: Cron, ms: number, horizonMs: number): number | undefined {
  const start = Math.floor(ms / MINUTE) * MINUTE + MINUTE;
  for (let t = start; t <= ms + horizonMs; t += MINUTE) if (cronFires(c, t)) return t;
  return undefined;
}

// ---- budgets ----

export interface BudgetNow {
  budget: DisruptionBudget;
  /** Index in the pool's budgets (-1: Karpenter's default). */
  index: number;
  active: boolean;
  /** Disruptions it allows now (when active). */
  allowed: number;
  /** An active scheduled budget: when its window ends (epoch ms). */
  activeUntil?: number;
  /** An inactive scheduled budget: when its window opens next (within a week). */
  nextStart?: number;
  /** The schedule or duration did not parse: Karpenter refuses such a pool; listed, not applied. */
  invalid?: string;
}

const WEEK = 7 * 24 * 60 * MINUTE;

function scaled(nodes: string, poolNodes: number): number {
  const pct = /^(\d+)%$/.exec(nodes.trim());
  if (pct) return Math.ceil((poolNodes * Number(pct[1])) / 100);
  const n = Number(nodes);
  return Number.isFinite(n) ? Math.max(0, Math.floor(n)) : 0;
}

/** Every budget of a pool that applies to `reason`, evaluated at `now`. */
export function budgetsNow(
  pool: NodePool,
  reason: "Underutilized" | "Empty" | "Drifted",
  poolNodes: number,
  now: number,
): BudgetNow[] {
  const set = pool.spec.disruption?.budgets;
  const list = set && set.length > 0 ? set : DEFAULT_BUDGETS;
  const out: BudgetNow[] = [];
  list.forEach((budget, i) => {
    if (budget.reasons && budget.reasons.length > 0 && !budget.reasons.includes(reason)) return;
    const index = set && set.length > 0 ? i : -1;
    const allowed = scaled(budget.nodes, poolNodes);
    if (!budget.schedule) {
      out.push({ budget, index, active: true, allowed });
      return;
    }
    try {
      const cron = parseCron(budget.schedule);
      const dur = budget.duration ? parseDuration(budget.duration) : null;
      if (dur === null || dur <= 0) throw new Error(`duration ${budget.duration ?? "(none)"}`);
      const fire = lastFire(cron, now, dur);
      if (fire === undefined) {
        const next = nextFire(cron, now, WEEK);
        out.push({
          budget,
          index,
          active: false,
          allowed,
          ...(next !== undefined ? { nextStart: next } : {}),
        });
        return;
      }
      // Windows that start before this one ends extend it (bounded: a week ahead at most).
      let end = fire + dur;
      for (
        let n = nextFire(cron, now, WEEK);
        n !== undefined && n <= end && end - now < WEEK;
        n = nextFire(cron, n, WEEK)
      )
        end = n + dur;
      out.push({ budget, index, active: true, allowed, activeUntil: end });
    } catch (err) {
      out.push({ budget, index, active: false, allowed, invalid: (err as Error).message });
    }
  });
  return out;
}

/** The binding budget now: the active one allowing the fewest disruptions (undefined: none active). */
export function bindingBudget(budgets: readonly BudgetNow[]): BudgetNow | undefined {
  let best: BudgetNow | undefined;
  for (const b of budgets) if (b.active && (best === undefined || b.allowed < best.allowed)) best = b;
  return best;
}

/** policy/v1 label selector: null matches nothing, {} matches everything. */
export function selectorMatches(
  sel: LabelSelector | null | undefined,
  labels: Record<string, string> = {},
): boolean {
  if (!sel) return false;
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of sel.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    const v = labels[e.key];
    const vals = e.values ?? [];
    if (e.operator === "In" && !(has && vals.includes(v ?? ""))) return false;
    if (e.operator === "NotIn" && has && vals.includes(v ?? "")) return false;
    if (e.operator === "Exists" && !has) return false;
    if (e.operator === "DoesNotExist" && has) return false;
  }
  return true;
}
