// Karpenter's NodeOverlay price rules (v1.8+), as Karpenter v1.15 applies them: which overlay
// prices an offering (pkg/controllers/nodeoverlay: controller.go, store.go), in what order
// (pkg/apis/v1alpha1 OrderByWeight) and how it changes the price (pkg/cloudprovider AdjustedPrice).
// Pure: the offering is named by its labels (a node's or NodeClaim's: nodepool, instance type,
// capacity type, zone, the pool's template labels and the instance type's own labels).
import type { NodeSelectorRequirement } from "../objects/kube.ts";
import type { NodeOverlay } from "../objects/karpenter.ts";
import { numericHolds } from "./requirements.ts";

/** The overlay that priced an offering, and the list price it changed. */
export interface OverlayApplied {
  /** The NodeOverlay's name. */
  name: string;
  /** Its `price` ("0.42") or `priceAdjustment` ("-30%", "+0.1") as written. */
  change: string;
  listUsdPerHour: number;
}

/**
 * Karpenter's `AdjustedPrice`: a signed change is a percentage ("-30%") or dollars ("+0.1"),
 * floored at 0; an unsigned one is the new price; an empty one keeps the price.
 */
export function adjustedPrice(list: number, change: string): number {
  if (change === "") return list;
  if (!change.startsWith("+") && !change.startsWith("-")) return Number.parseFloat(change);
  const adjusted = change.endsWith("%")
    ? list * (1 + Number.parseFloat(change.slice(0, -1)) / 100)
    : list + Number.parseFloat(change);
  return adjusted >= 0 ? adjusted : 0;
}

/** Overlays by priority: higher weight first, equal weights by name, later in the alphabet first. */
export function orderByWeight(overlays: readonly NodeOverlay[]): NodeOverlay[] {
  return [...overlays].sort((a, b) => {
    const wa = a.spec.weight ?? 0;
    const wb = b.spec.weight ?? 0;
    if (wa !== wb) return wb - wa;
    const na = a.metadata.name ?? "";
    const nb = b.metadata.name ?? "";
    return na === nb ? 0 : na > nb ? -1 : 1;
  });
}

const INTEGER = /^-?\d+$/;

/** One requirement against single-valued labels (Karpenter's Compatible: an undefined key only passes NotIn/DoesNotExist). */
function requirementMatches(r: NodeSelectorRequirement, labels: Readonly<Record<string, string>>): boolean {
  const has = Object.hasOwn(labels, r.key);
  const v = has ? labels[r.key] : undefined;
  const values = r.values ?? [];
  switch (r.operator) {
    case "In":
      return v !== undefined && values.includes(v);
    case "NotIn":
      return v === undefined || !values.includes(v);
    case "Exists":
      return has;
    case "DoesNotExist":
      return !has;
    case "Gt":
    case "Lt":
    case "Gte":
    case "Lte":
      // Integer label values only (Karpenter's withinIntBounds drops the rest).
      return (
        v !== undefined &&
        INTEGER.test(v) &&
        values.length === 1 &&
        numericHolds(r.operator, Number.parseInt(v, 10), values[0])
      );
    default:
      return false;
  }
}

/** Whether an overlay's requirements select the offering these labels name (none select all). */
export function overlayMatches(o: NodeOverlay, labels: Readonly<Record<string, string>>): boolean {
  return (o.spec.requirements ?? []).every((r) => requirementMatches(r, labels));
}

/**
 * Karpenter applies an overlay once its NodeOverlay controller validated it: that controller runs
 * only with the gate NodeOverlay on, and fills the price store in the pass that writes this
 * condition. Not yet validated, marked invalid (runtime validation, a conflict on any offering) or
 * the gate off: Karpenter prices with the list price, and so does Wave.
 */
export function validated(o: NodeOverlay): boolean {
  return (o.status?.conditions ?? []).some((c) => c.type === "ValidationSucceeded" && c.status === "True");
}

/** The price change of an overlay: `price` if set, else `priceAdjustment`. */
const changeOf = (o: NodeOverlay): string | undefined => o.spec.price ?? o.spec.priceAdjustment;

/**
 * The overlay that prices the offering these labels name, as Karpenter's store decides: overlays
 * in weight order, the first matching one with a price wins; a later one of the same weight as the
 * last price (or capacity) overlay on this offering conflicts and is skipped whole — as is any
 * overlay Karpenter has not validated (`validated`). `ordered` must come from `orderByWeight`.
 */
export function winningOverlay(
  ordered: readonly NodeOverlay[],
  labels: Readonly<Record<string, string>>,
): { overlay: NodeOverlay; change: string } | undefined {
  let won: { overlay: NodeOverlay; change: string } | undefined;
  let priceWeight: number | undefined;
  let capacityWeight: number | undefined;
  let capacityNames: readonly string[] = [];
  for (const o of ordered) {
    if (!validated(o) || !overlayMatches(o, labels)) continue;
    const w = o.spec.weight ?? 0;
    const change = changeOf(o);
    const names = o.spec.capacity ? Object.keys(o.spec.capacity) : undefined;
    const priceConflict = change !== undefined && priceWeight === w;
    const capacityConflict =
      names !== undefined && capacityWeight === w && names.some((n) => capacityNames.includes(n));
    if (priceConflict || capacityConflict) continue;
    if (change !== undefined) {
      won ??= { overlay: o, change };
      priceWeight = w;
    }
    if (names !== undefined) {
      capacityWeight = w;
      capacityNames = names;
    }
  }
  return won;
}

/** The offering's price as Karpenter sees it, or undefined when no overlay changes it. */
export function overlaidPrice(
  ordered: readonly NodeOverlay[],
  labels: Readonly<Record<string, string>>,
  listUsdPerHour: number,
): (OverlayApplied & { usdPerHour: number }) | undefined {
  const won = winningOverlay(ordered, labels);
  if (!won) return undefined;
  return {
    name: won.overlay.metadata.name ?? "",
    change: won.change,
    listUsdPerHour,
    usdPerHour: adjustedPrice(listUsdPerHour, won.change),
  };
}
