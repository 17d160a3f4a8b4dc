// Kubernetes resource quantities as plain numbers, for the warmup fit arithmetic.
// Private to warmup until src/karpenter/quantity.ts lands; then this file should re-export it.
// CPU is counted in millicores (what the scheduler compares), everything else in base units
// (bytes, pods, devices). Bad input throws a QuantityError naming the value.

import type { ResourceList } from "../kube/objects.ts";

export class QuantityError extends Error {
  constructor(value: string, why: string) {
    super(`invalid quantity ${JSON.stringify(value)}: ${why}`);
    this.name = "QuantityError";
  }
}

const SUFFIX: Record<string, number> = {
  "": 1,
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

const QUANTITY = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$/;

/** Parses a quantity ("250m", "1.5Gi", "2e3") into base units. */
export function parseQuantity(value: string): number {
  const m = QUANTITY.exec(value.trim());
  if (!m) throw new QuantityError(value, "expected a number with an optional SI, binary or exponent suffix");
  const [, num = "", exp, suffix = ""] = m;
  const base = Number(num);
  const scale = exp !== undefined ? 10 ** Number(exp.slice(1)) : (SUFFIX[suffix] ?? 1);
  const out = base * scale;
  if (!Number.isFinite(out)) throw new QuantityError(value, "out of range");
  return out;
}

/** Millicores for "cpu" (rounded up like the scheduler does), base units otherwise. */
export function resourceAmount(resource: string, value: string): number {
  const n = parseQuantity(value);
  // toFixed strips float noise (0.1 * 1000 = 100.00000000000001) before rounding up.
  return resource === "cpu" ? Math.ceil(Number((n * 1000).toFixed(6))) : n;
}

/** A resource list as numbers (see resourceAmount for units). */
export type Amounts = Record<string, number>;

export function toAmounts(list: ResourceList | undefined): Amounts {
  const out: Amounts = {};
  for (const [k, v] of Object.entries(list ?? {})) out[k] = resourceAmount(k, v);
  return out;
}

export function addAmounts(a: Amounts, b: Amounts): Amounts {
  const out: Amounts = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = (out[k] ?? 0) + v;
  return out;
}

export function maxAmounts(a: Amounts, b: Amounts): Amounts {
  const out: Amounts = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = Math.max(out[k] ?? 0, v);
  return out;
}

/** Formats amounts back into a ResourceList the apiserver accepts. */
export function formatAmounts(a: Amounts): ResourceList {
  const out: ResourceList = {};
  for (const [k, v] of Object.entries(a)) {
    if (v <= 0) continue;
    out[k] = k === "cpu" ? `${Math.ceil(v)}m` : String(Math.ceil(v));
  }
  return out;
}
