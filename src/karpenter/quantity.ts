// Kubernetes resource quantities ("500m", "2Gi", "1e3", "1.5") parsed exactly, following
// k8s.io/apimachinery/pkg/api/resource: values are kept as integer nano-units in a bigint and
// rounded *up* (away from zero) to nano precision, as the apiserver does, so "you asked for some,
// you get some". Conversions to JS numbers round up the same way (Quantity.MilliValue/Value).

export class QuantityError extends Error {
  readonly input: string;

  constructor(input: string, why: string) {
    super(`invalid quantity ${JSON.stringify(input)}: ${why}`);
    this.name = "QuantityError";
    this.input = input;
  }
}

const DECIMAL_SUFFIXES: Record<string, number> = {
  n: -9,
  u: -6,
  m: -3,
  "": 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};

const BINARY_SUFFIXES: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };

// <sign>? <digits>? (. <digits>?)? <suffix>, suffix = binary | decimal | e/E exponent.
const QUANTITY = /^([+-]?)(\d*)(?:\.(\d*))?([a-zA-Z]*)([+-]?\d+)?$/;

// Beyond this, a quantity is far outside anything a cluster can hold; refusing it keeps a
// hostile "1e999999999" from allocating a billion-digit bigint.
const MAX_DECIMAL_EXPONENT = 60;

const pow10Cache = new Map<number, bigint>();
function pow10(n: number): bigint {
  let v = pow10Cache.get(n);
  if (v === undefined) {
    v = 10n ** BigInt(n);
    pow10Cache.set(n, v);
  }
  return v;
}

/** Divides rounding the magnitude up (away from zero), like inf.RoundUp. */
function divAwayFromZero(a: bigint, b: bigint): bigint {
  const q = a / b;
  if (q * b === a) return q;
  return a < 0n ? q - 1n : q + 1n;
}

/** Parses a quantity into exact nano-units (10⁻⁹ of the base unit), rounded up. */
export function parseQuantityNano(input: string): bigint {
  if (typeof input !== "string") throw new QuantityError(String(input), "not a string");
  const m = QUANTITY.exec(input);
  if (!m) throw new QuantityError(input, "expected <number><suffix>, e.g. 500m, 2, 1.5Gi, 1e3");
  const sign = m[1] ?? "";
  const whole = m[2] ?? "";
  const frac = m[3] ?? "";
  const letters = m[4] ?? "";
  const expDigits = m[5];
  if (whole === "" && frac === "") throw new QuantityError(input, "no digits");

  let decimalExp: number;
  let binaryExp = 0;
  if (expDigits !== undefined) {
    if (letters !== "e" && letters !== "E") {
      throw new QuantityError(input, `unknown suffix ${JSON.stringify(letters + expDigits)}`);
    }
    decimalExp = Number(expDigits);
    if (!Number.isSafeInteger(decimalExp) || Math.abs(decimalExp) > MAX_DECIMAL_EXPONENT) {
      throw new QuantityError(input, `exponent out of range (|e| ≤ ${String(MAX_DECIMAL_EXPONENT)})`);
    }
  } else if (letters in DECIMAL_SUFFIXES) {
    decimalExp = DECIMAL_SUFFIXES[letters] ?? 0;
  } else if (letters in BINARY_SUFFIXES) {
    decimalExp = 0;
    binaryExp = BINARY_SUFFIXES[letters] ?? 0;
  } else {
    throw new QuantityError(
      input,
      `unknown suffix ${JSON.stringify(letters)} (use n u m k M G T P E, Ki Mi Gi Ti Pi Ei, or e<N>)`,
    );
  }

  let digits = BigInt((whole || "0") + frac);
  if (sign === "-") digits = -digits;
  if (binaryExp > 0) digits <<= BigInt(binaryExp);
  // value = digits × 10^(decimalExp − len(frac)); in nano-units add 9 to the exponent.
  const scale = decimalExp - frac.length + 9;
  if (scale >= 0) return digits * pow10(scale);
  if (digits === 0n) return 0n;
  // Any non-zero amount smaller than 1n rounds up to ±1n.
  if (-scale > digits.toString().length + 1) return digits < 0n ? -1n : 1n;
  return divAwayFromZero(digits, pow10(-scale));
}

const NANO_PER_MILLI = 1_000_000n;
const NANO_PER_UNIT = 1_000_000_000n;

function toSafeNumber(v: bigint, input: string): number {
  const n = Number(v);
  if (!Number.isFinite(n)) throw new QuantityError(input, "too large");
  return n;
}

/** Thousandths of the base unit, rounded up: "500m" → 500, "2" → 2000 (CPU in millicores). */
export function parseMilli(input: string): number {
  return toSafeNumber(divAwayFromZero(parseQuantityNano(input), NANO_PER_MILLI), input);
}

/** Whole base units, rounded up: "2Gi" → 2147483648, "1k" → 1000, "500m" → 1. */
export function parseUnits(input: string): number {
  return toSafeNumber(divAwayFromZero(parseQuantityNano(input), NANO_PER_UNIT), input);
}

/** Base units as a (possibly fractional) number: "500m" → 0.5, "1.5" → 1.5, "1Ki" → 1024. */
export function parseQuantity(input: string): number {
  const nano = parseQuantityNano(input);
  const whole = nano / NANO_PER_UNIT;
  const rest = nano - whole * NANO_PER_UNIT;
  return Number(whole) + Number(rest) / 1e9;
}

/** CPU in millicores: "1.5" → 1500, "250m" → 250. */
export const cpuMillis = parseMilli;
/** Memory (or storage) in bytes: "512Mi" → 536870912, "1G" → 1000000000. */
export const memoryBytes = parseUnits;

/** Whether `input` is a valid quantity. */
export function isQuantity(input: string): boolean {
  try {
    parseQuantityNano(input);
    return true;
  } catch {
    return false;
  }
}

// ---- formatting -------------------------------------------------------------------------------

const BINARY_STEPS: [string, number][] = [
  ["Ei", 2 ** 60],
  ["Pi", 2 ** 50],
  ["Ti", 2 ** 40],
  ["Gi", 2 ** 30],
  ["Mi", 2 ** 20],
  ["Ki", 2 ** 10],
];
const DECIMAL_STEPS: [string, number][] = [
  ["E", 1e18],
  ["P", 1e15],
  ["T", 1e12],
  ["G", 1e9],
  ["M", 1e6],
  ["k", 1e3],
];

/** Millicores as Kubernetes writes them: 2000 → "2", 1500 → "1500m". Round-trips exactly. */
export function formatMilli(millis: number): string {
  if (!Number.isInteger(millis)) throw new RangeError(`millicores must be an integer, got ${String(millis)}`);
  return millis % 1000 === 0 ? String(millis / 1000) : `${String(millis)}m`;
}

/**
 * Whole units with the largest suffix that divides them exactly, binary first when `binary`
 * (bytes): 2147483648 → "2Gi", 1536 → "1536" with binary=false, 1000 → "1k". Round-trips exactly.
 */
export function formatUnits(units: number, binary = true): string {
  if (!Number.isSafeInteger(units))
    throw new RangeError(`units must be a safe integer, got ${String(units)}`);
  if (units === 0) return "0";
  for (const [suffix, size] of binary ? BINARY_STEPS : DECIMAL_STEPS) {
    if (units % size === 0) return `${String(units / size)}${suffix}`;
  }
  return String(units);
}

function trimFixed(n: number, digits: number): string {
  const s = n.toFixed(digits);
  return s.includes(".") ? s.replace(/\.?0+$/, "") : s;
}

/** Human display of bytes with binary units: 1610612736 → "1.5Gi", 512 → "512B". */
export function formatBytesHuman(bytes: number, digits = 1): string {
  const abs = Math.abs(bytes);
  for (const [suffix, size] of BINARY_STEPS) {
    if (abs >= size) return `${trimFixed(bytes / size, digits)}${suffix}`;
  }
  return `${trimFixed(bytes, 0)}B`;
}

/** Human display of CPU: 1500 → "1.5", 250 → "250m". */
export function formatCpuHuman(millis: number, digits = 2): string {
  if (Math.abs(millis) < 1000) return `${trimFixed(millis, 0)}m`;
  return trimFixed(millis / 1000, digits);
}
