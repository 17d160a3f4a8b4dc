// Go time.Duration strings as Karpenter writes them ("720h", "30s", "1h30m", "Never").

const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

const PART = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/y;

/**
 * Milliseconds, or `null` for Karpenter's "Never". Throws on anything else that is not a Go
 * duration (time.ParseDuration grammar: optional sign, then number+unit pairs, or a bare "0").
 */
export function parseDuration(input: string): number | null {
  if (input === "Never") return null;
  let s = input;
  let sign = 1;
  if (s.startsWith("-") || s.startsWith("+")) {
    if (s.startsWith("-")) sign = -1;
    s = s.slice(1);
  }
  if (s === "0") return 0;
  if (s === "") throw new Error(`invalid duration ${JSON.stringify(input)}`);
  let total = 0;
  PART.lastIndex = 0;
  while (PART.lastIndex < s.length) {
    const m = PART.exec(s);
    if (!m) throw new Error(`invalid duration ${JSON.stringify(input)}: expected e.g. 720h, 30s, 1h30m`);
    total += Number(m[1]) * (UNIT_MS[m[2] ?? ""] ?? 0);
  }
  return sign * total;
}
