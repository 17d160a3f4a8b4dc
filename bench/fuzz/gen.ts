// Seeded generators of hostile input: random JSON, mutations of valid documents (delete, replace,
// retype, grow), truncations and byte noise. Pure over the PRNG, so a failing case replays.
export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

export interface Gen {
  int(n: number): number;
  pick<T>(xs: readonly T[]): T;
  chance(p: number): boolean;
  value(depth?: number): Json;
  mutate(doc: Json, times?: number): Json;
  /** Valid JSON text, cut short or with noise appended (5-10 % of callers want it malformed). */
  mangle(text: string): string;
  bytes(n: number): Uint8Array;
}

const STRINGS = [
  "",
  "a",
  "0",
  "0x10",
  "1e20",
  "-1",
  " 5",
  "null",
  "true",
  "NaN",
  "\u0000",
  "\r\n",
  "<script>alert(1)</script>",
  "é",
  "x".repeat(300),
  "__proto__",
  "constructor",
  "../../etc/passwd",
  "%00",
  "Prefer",
  "Require",
  "spot",
  "on-demand",
];
const NUMBERS = [0, -1, 1, 1.5, 3, 100, 101, 1e20, -1e20, 2 ** 53, 2 ** 53 + 2, 1e308, -0, 8.64e15];

export function gen(rand: () => number): Gen {
  const int = (n: number): number => Math.floor(rand() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)] as T;
  const chance = (p: number): boolean => rand() < p;
  const value = (depth = 0): Json => {
    switch (int(depth > 3 ? 5 : 7)) {
      case 0:
        return null;
      case 1:
        return chance(0.5);
      case 2:
        return pick(NUMBERS);
      case 3:
        return pick(STRINGS);
      case 4:
        return String(int(1e6));
      case 5:
        return Array.from({ length: int(4) }, () => value(depth + 1));
      default:
        return Object.fromEntries(Array.from({ length: int(4) }, () => [pick(STRINGS), value(depth + 1)]));
    }
  };
  const paths = (
    doc: Json,
    at: (string | number)[] = [],
    out: (string | number)[][] = [],
  ): (string | number)[][] => {
    out.push(at);
    if (Array.isArray(doc)) doc.forEach((v, i) => paths(v, [...at, i], out));
    else if (doc !== null && typeof doc === "object")
      for (const [k, v] of Object.entries(doc)) paths(v, [...at, k], out);
    return out;
  };
  const mutateOnce = (doc: Json): Json => {
    const path = pick(paths(doc));
    if (path.length === 0) return chance(0.1) ? value() : doc;
    let parent = doc as Record<string | number, Json>;
    for (const p of path.slice(0, -1)) parent = parent[p] as Record<string | number, Json>;
    const last = path[path.length - 1] as string | number;
    switch (int(5)) {
      case 0:
        if (Array.isArray(parent)) parent.splice(Number(last), 1);
        else Reflect.deleteProperty(parent, last);
        break;
      case 1:
        parent[last] = value();
        break;
      case 2:
        parent[last] = pick(STRINGS);
        break;
      case 3:
        parent[last] = pick(NUMBERS);
        break;
      default: {
        const t = parent[last];
        if (Array.isArray(t)) t.push(value(1));
        else if (t !== null && typeof t === "object") t[pick(STRINGS)] = value(1);
        else parent[last] = [t ?? null];
      }
    }
    return doc;
  };
  return {
    int,
    pick,
    chance,
    value,
    mutate: (doc, times = 1 + int(4)) => {
      let d = structuredClone(doc);
      for (let i = 0; i < times; i++) d = mutateOnce(d);
      return d;
    },
    mangle: (text) =>
      text.slice(0, int(text.length + 1)) + pick(["", "}", "\uFFFF", "\\", '"', "ÿ", "\u0000"]),
    bytes: (n) => Uint8Array.from({ length: n }, () => int(256)),
  };
}
