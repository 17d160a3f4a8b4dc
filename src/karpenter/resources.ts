// Resource lists as numbers, in the units the scheduler compares: CPU in millicores
// (Quantity.MilliValue) and every other resource in whole base units (Quantity.Value: bytes for
// memory and storage, a count for pods and extended resources).
import type { Container, Pod, ResourceList } from "../objects/kube.ts";
import { formatMilli, formatUnits, parseMilli, parseUnits, QuantityError } from "./quantity.ts";

/** Amounts by resource name; `cpu` is in millicores, the rest in base units. */
export type Resources = Record<string, number>;

export const CPU = "cpu";
export const MEMORY = "memory";
export const PODS = "pods";
export const EPHEMERAL_STORAGE = "ephemeral-storage";

/** True for resources measured in thousandths (only CPU among the standard ones). */
export function isMilliResource(name: string): boolean {
  return name === CPU;
}

// Clusters repeat a handful of quantity strings ("100m", "64Mi") across 100k+ pods; parsing each
// once keeps state updates cheap. Bounded: cleared when full. Only successes are cached.
const CACHE_LIMIT = 4096;
const milliCache = new Map<string, number>();
const unitCache = new Map<string, number>();

function cached(cache: Map<string, number>, quantity: string, parse: (q: string) => number): number {
  let v = cache.get(quantity);
  if (v === undefined) {
    v = parse(quantity);
    if (cache.size >= CACHE_LIMIT) cache.clear();
    cache.set(quantity, v);
  }
  return v;
}

/** One quantity in the resource's canonical unit. */
export function amountOf(name: string, quantity: string): number {
  return isMilliResource(name)
    ? cached(milliCache, quantity, parseMilli)
    : cached(unitCache, quantity, parseUnits);
}

/** Parses every entry; a bad quantity throws a QuantityError naming the resource. */
export function parseResources(list: ResourceList | undefined): Resources {
  return list ? addListInto({}, list) : {};
}

/**
 * Adds every entry of `list`, parsed, into `dest` in place (parseResources then addInto, without
 * the intermediate object: state writes do this for every container of 100k+ pods).
 */
function addListInto(dest: Resources, list: ResourceList): Resources {
  for (const name of Object.keys(list)) {
    const q = list[name] as string;
    let v: number;
    try {
      v = amountOf(name, q);
    } catch (err) {
      if (err instanceof QuantityError) throw new QuantityError(q, `${name}: ${err.message}`);
      throw err;
    }
    dest[name] = (dest[name] ?? 0) + v;
  }
  return dest;
}

/** Resources measured in bytes (written with binary suffixes); the rest are counts. */
export function isByteResource(name: string): boolean {
  return name === MEMORY || name.endsWith("storage") || name.startsWith("hugepages-");
}

/** Back to a ResourceList of canonical quantity strings (exact round-trip). */
export function formatResources(r: Resources): ResourceList {
  const out: ResourceList = {};
  for (const [name, v] of Object.entries(r)) {
    out[name] = isMilliResource(name) ? formatMilli(v) : isByteResource(name) ? formatUnits(v) : String(v);
  }
  return out;
}

/** Sum of ResourceLists, as a ResourceList ("500m" + "1.5" → "2"). */
export function sumResourceLists(...lists: (ResourceList | undefined)[]): ResourceList {
  return formatResources(addResources(...lists.map(parseResources)));
}

/** a − b as a ResourceList (negative where b exceeds a). */
export function subtractResourceLists(
  a: ResourceList | undefined,
  b: ResourceList | undefined,
): ResourceList {
  return formatResources(subtractResources(parseResources(a), parseResources(b)));
}

/** Sum of any number of resource sets. */
export function addResources(...all: Resources[]): Resources {
  const out: Resources = {};
  for (const r of all) for (const [k, v] of Object.entries(r)) out[k] = (out[k] ?? 0) + v;
  return out;
}

/** Adds (or with sign −1 subtracts) `src` into `dest` in place, for hot paths; zeros are kept. */
export function addInto(dest: Resources, src: Resources, sign: 1 | -1 = 1): Resources {
  for (const k of Object.keys(src)) dest[k] = (dest[k] ?? 0) + sign * (src[k] as number);
  return dest;
}

/** The same set without zero entries. */
export function withoutZeros(r: Resources): Resources {
  return Object.fromEntries(Object.entries(r).filter(([, v]) => v !== 0));
}

/** a − b per resource (may go negative: that is an overcommit, callers decide). */
export function subtractResources(a: Resources, b: Resources): Resources {
  const out: Resources = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = (out[k] ?? 0) - v;
  return out;
}

/** Per-resource maximum. */
export function maxResources(...all: Resources[]): Resources {
  const out: Resources = {};
  for (const r of all) for (const [k, v] of Object.entries(r)) out[k] = Math.max(out[k] ?? v, v);
  return out;
}

/** Whether `requests` fit into `available` for every resource requested (absent means 0). */
export function fits(requests: Resources, available: Resources): boolean {
  for (const [k, v] of Object.entries(requests)) if (v > 0 && v > (available[k] ?? 0)) return false;
  return true;
}

function containerRequests(c: Container): Resources {
  return parseResources(c.resources?.requests);
}

/**
 * A pod's effective requests as kube-scheduler and Karpenter compute them
 * (k8s.io/component-helpers/resource.PodRequests):
 * sum(containers) + sidecars, raised to the largest init-container step (an init container runs
 * alongside the sidecars started before it), pod-level cpu/memory/hugepages requests override the
 * container aggregate, then RuntimeClass overhead is added.
 */
export function podRequests(pod: Pod): Resources {
  const reqs: Resources = {};
  for (const c of pod.spec.containers) {
    const list = c.resources?.requests;
    if (list) addListInto(reqs, list);
  }
  const inits = pod.spec.initContainers;
  if (inits !== undefined && inits.length > 0) {
    const sidecars: Resources = {};
    let initMax: Resources = {};
    for (const c of inits) {
      const own = containerRequests(c);
      if (c.restartPolicy === "Always") {
        addInto(reqs, own);
        addInto(sidecars, own);
        initMax = maxResources(initMax, sidecars);
      } else {
        initMax = maxResources(initMax, addResources(own, sidecars));
      }
    }
    for (const [k, v] of Object.entries(initMax)) if (v > (reqs[k] ?? 0)) reqs[k] = v;
  }
  const podLevel = pod.spec.resources?.requests;
  if (podLevel) {
    for (const [name, q] of Object.entries(podLevel)) {
      if (name === CPU || name === MEMORY || name.startsWith("hugepages-")) reqs[name] = amountOf(name, q);
    }
  }
  if (pod.spec.overhead) addInto(reqs, parseResources(pod.spec.overhead));
  // A fresh object either way; copied only when there are zeros to leave out.
  for (const k of Object.keys(reqs)) if (reqs[k] === 0) return withoutZeros(reqs);
  return reqs;
}

/** Succeeded and Failed pods hold no resources on their node. */
export function isTerminalPod(pod: Pod): boolean {
  const phase = pod.status?.phase;
  return phase === "Succeeded" || phase === "Failed";
}
