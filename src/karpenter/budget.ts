// A NodePool's disruption budgets as Karpenter v1 reads them (pkg/apis/v1/nodepool.go): a budget
// with a `schedule` (cron, UTC) and `duration` is active while the schedule's last hit is at most
// `duration` ago; the allowed disruptions for a reason are the minimum over the active budgets that
// name it (or name no reason), a percentage of the pool's nodes rounded up. Pure.
import type { DisruptionBudget, NodePool } from "../objects/karpenter.ts";
import { parseDuration } from "./duration.ts";

export type DisruptionReason = "Underutilized" | "Empty" | "Drifted";

const MIN = 60_000;

interface CronField {
  values: ReadonlySet<number>;
  /** The field was `*` (robfig/cron: day-of-month and day-of-week then combine with AND). */
  star: boolean;
}

export interface Cron {
  minute: CronField;
  hour: CronField;
  dom: CronField;
  month: CronField;
  dow: CronField;
}

const MACROS: Record<string, string> = {
  "@yearly": "0 0 1 1 *",
  "@annually": "0 0 1 1 *",
  "@monthly": "0 0 1 * *",
  "@weekly": "0 0 * * 0",
  "@daily": "0 0 * * *",
  "@midnight": "0 0 * * *",
  "@hourly": "0 * * * *",
};
const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

function field(text: string, lo: number, hi: number, names: readonly string[] = [], nameBase = 0): CronField {
  const num = (s: string): number => {
    const i = names.indexOf(s.toLowerCase());
    const n = i >= 0 ? i + nameBase : /^\d+$/.test(s) ? Number(s) : NaN;
    if (!Number.isInteger(n) || n < lo || n > hi)
      throw new Error(`cron value ${JSON.stringify(s)} out of ${lo}-${hi}`);
    return n;
  };
  const values = new Set<number>();
  for (const part of text.split(",")) {
    const [range = "", stepText] = part.split("/");
    const step = stepText === undefined ? 1 : Number(stepText);
    if (!Number.isInteger(step) || step < 1) throw new Error(`cron step ${JSON.stringify(stepText)} invalid`);
    let from: number;
    let to: number;
    if (range === "*" || range === "?") [from, to] = [lo, hi];
    else if (range.includes("-")) {
      const [a = "", b = ""] = range.split("-");
      [from, to] = [num(a), num(b)];
    } else {
      from = num(range);
      to = stepText === undefined ? from : hi;
    }
    for (let v = from; v <= to; v += step) values.add(v);
  }
  return { values, star: text === "*" || text === "?" };
}

/** A standard 5-field cron expression (or @daily-style macro), as Karpenter's budgets accept. */
export function parseCron(expr: string): Cron {
  const text = MACROS[expr.trim().toLowerCase()] ?? expr.trim();
  const parts = text.split(/\s+/);
  if (parts.length !== 5) throw new Error(`cron ${JSON.stringify(expr)}: expected 5 fields`);
  const [mi = "", h = "", dom = "", mo = "", dow = ""] = parts;
  const d = field(dow, 0, 7, DAYS);
  // 7 is Sunday as well as 0.
  if (d.values.has(7)) d.values = new Set([...d.values].map((v) => v % 7));
  return {
    minute: field(mi, 0, 59),
    hour: field(h, 0, 23),
    dom: field(dom, 1, 31),
    month: field(mo, 1, 12, MONTHS, 1),
    dow: d,
  };
}

/** Whether the cron fires at the (UTC) minute containing `ms`. */
export function cronMatches(c: Cron, ms: number): boolean {
  const t = new Date(ms);
  if (!c.minute.values.has(t.getUTCMinutes()) || !c.hour.values.has(t.getUTCHours())) return false;
  if (!c.month.values.has(t.getUTCMonth() + 1)) return false;
  const domOk = c.dom.values.has(t.getUTCDate());
  const dowOk = c.dow.values.has(t.getUTCDay());
  return c.dom.star || c.dow.star ? domOk && dowOk : domOk || dowOk;
}

const cronCache = new Map<string, Cron | null>();
function cronOf(expr: string): Cron | null {
  let c = cronCache.get(expr);
  if (c === undefined) {
    try {
      c = parseCron(expr);
    } catch {
      c = null;
    }
    cronCache.set(expr, c);
  }
  return c;
}

/**
 * The last time (epoch ms, a whole UTC minute) the schedule fired in (now − duration, now], or
 * undefined. Karpenter: `schedule.Next(now − duration) <= now`.
 */
export function lastHit(schedule: string, durationMs: number, nowMs: number): number | undefined {
  const c = cronOf(schedule);
  if (!c) return undefined;
  // Asked every tick by the simulator: the answer only changes once a minute.
  const memo = `${schedule}|${durationMs}|${Math.floor(nowMs / MIN)}|${nowMs % MIN >= durationMs % MIN ? 1 : 0}`;
  if (hitMemo.has(memo)) return hitMemo.get(memo);
  const start = nowMs - durationMs;
  let hit: number | undefined;
  for (let t = Math.floor(nowMs / MIN) * MIN; t > start; t -= MIN)
    if (cronMatches(c, t)) {
      hit = t;
      break;
    }
  if (hitMemo.size > 1000) hitMemo.clear();
  hitMemo.set(memo, hit);
  return hit;
}
const hitMemo = new Map<string, number | undefined>();

/** The first time (epoch ms) after `fromMs` the schedule fires, within `horizonMs` (default 8 days). */
export function nextHit(schedule: string, fromMs: number, horizonMs = 8 * 24 * 60 * MIN): number | undefined {
  const c = cronOf(schedule);
  if (!c) return undefined;
  for (let t = Math.floor(fromMs / MIN) * MIN + MIN; t <= fromMs + horizonMs; t += MIN)
    if (cronMatches(c, t)) return t;
  return undefined;
}

export interface BudgetState {
  active: boolean;
  /** Active with a schedule: when this window ends (its last hit + duration). */
  until?: number;
  /** Misconfigured (bad cron or duration): Karpenter fails closed, 0 allowed. */
  invalid?: boolean;
}

export function budgetState(b: DisruptionBudget, nowMs: number): BudgetState {
  if (b.schedule === undefined && b.duration === undefined) return { active: true };
  let durationMs: number | null;
  try {
    durationMs = parseDuration(b.duration ?? "0s");
  } catch {
    return { active: true, invalid: true };
  }
  if (b.schedule === undefined || durationMs === null || cronOf(b.schedule) === null)
    return { active: true, invalid: true };
  const hit = lastHit(b.schedule, durationMs, nowMs);
  return hit === undefined ? { active: false } : { active: true, until: hit + durationMs };
}

/** A budget's `nodes` ("10%" or "3") for a pool of `numNodes`, rounded up as Karpenter does. */
export function budgetNodes(nodes: string, numNodes: number): number {
  const pct = /^(\d+)%$/.exec(nodes.trim());
  if (pct) return Math.ceil((Number(pct[1]) / 100) * numNodes);
  const n = Number(nodes);
  return Number.isInteger(n) && n >= 0 ? n : 0;
}

/**
 * Nodes of the pool Karpenter may disrupt now for `reason` (Infinity when no budget applies;
 * Karpenter's default budget is 10 %). The budgets that make it 0 are returned with it.
 */
export function allowedDisruptions(
  pool: NodePool,
  numNodes: number,
  reason: DisruptionReason,
  nowMs: number,
): { allowed: number; blocking: { budget: DisruptionBudget; until?: number }[] } {
  const budgets = pool.spec.disruption?.budgets ?? [{ nodes: "10%" }];
  let allowed = Infinity;
  const applying: { budget: DisruptionBudget; value: number; until?: number }[] = [];
  for (const budget of budgets) {
    if (budget.reasons && !budget.reasons.includes(reason)) continue;
    const s = budgetState(budget, nowMs);
    if (!s.active) continue;
    const value = s.invalid ? 0 : budgetNodes(budget.nodes, numNodes);
    allowed = Math.min(allowed, value);
    applying.push({ budget, value, ...(s.until !== undefined ? { until: s.until } : {}) });
  }
  return {
    allowed,
    blocking: applying
      .filter((a) => a.value === 0)
      .map((a) => ({ budget: a.budget, ...(a.until !== undefined ? { until: a.until } : {}) })),
  };
}
