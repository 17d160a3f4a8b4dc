// The layering of docs/architecture.md, checked against the code: every import between two
// folders of src/ (core/* counts per subfolder) must be one the "Layers" table allows, every
// folder must have a row, and the table itself must have no cycle. Test code (*.test.ts,
// *.test-helper.ts) is left out: an end-to-end test may drive the agent and core together.
// Files must not import each other in a circle either (`import type` counts: a type-only circle
// still couples the files), so every import between two files runs one way.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("../..", import.meta.url));

/** The rows of the "Layers" table: area → the areas it may import. */
export function layerRules(markdown: string): Map<string, Set<string>> {
  const section = markdown.split(/^## /m).find((s) => s.startsWith("Layers"));
  if (section === undefined) throw new Error("docs/architecture.md has no '## Layers' section");
  const rules = new Map<string, Set<string>>();
  for (const line of section.split("\n")) {
    const cells = line.split("|").map((c) => c.trim());
    const m = /^`([a-z/]+)`$/.exec(cells[1] ?? "");
    if (m?.[1] === undefined) continue;
    const allowed = [...(cells[2] ?? "").matchAll(/`([a-z/]+)`/g)].map((x) => x[1] ?? "");
    rules.set(m[1], new Set(allowed));
  }
  return rules;
}

/** The area of a file: `ui`, `core/<sub>`, or the first folder under src/. */
export function areaOf(file: string): string | undefined {
  const parts = file.split("/");
  if (parts[0] === "ui") return "ui";
  if (parts[0] !== "src" || parts.length < 3) return undefined;
  return parts[1] === "core" ? `core/${parts[2]}` : parts[1];
}

const IMPORT = /(?:\bfrom|\bimport)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g;

/** The non-test TypeScript files under `roots`, relative to `root`. */
function sourceFiles(root: string, roots: string[]): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(join(root, dir), { withFileTypes: true })) {
      const rel = join(dir, e.name);
      if (e.isDirectory()) {
        if (e.name !== "node_modules" && e.name !== "dist") walk(rel);
        continue;
      }
      if (!/\.tsx?$/.test(e.name) || /\.test(-helper)?\.ts$/.test(e.name)) continue;
      out.push(rel);
    }
  };
  for (const r of roots) walk(r);
  return out;
}

/** The file-level import graph of the non-test TypeScript under `roots`: file → files it imports. */
export function importGraph(root: string, roots: string[]): Map<string, Set<string>> {
  const files = sourceFiles(root, roots);
  const known = new Set(files);
  const graph = new Map<string, Set<string>>();
  for (const rel of files) {
    const to = new Set<string>();
    for (const m of readFileSync(join(root, rel), "utf8").matchAll(IMPORT)) {
      const target = normalize(join(dirname(rel), m[1] ?? ""));
      if (known.has(target)) to.add(target);
    }
    graph.set(rel, to);
  }
  return graph;
}

/** The strongly connected components of more than one node (or a self-import), by Tarjan. */
export function importCycles(graph: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const out: string[][] = [];
  let next = 0;
  const connect = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) ?? 0, index.get(w) ?? 0));
    }
    if (low.get(v) !== index.get(v)) return;
    const scc: string[] = [];
    let w: string | undefined;
    do {
      w = stack.pop();
      if (w === undefined) break;
      onStack.delete(w);
      scc.push(w);
    } while (w !== v);
    if (scc.length > 1 || (graph.get(v)?.has(v) ?? false)) out.push(scc.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) connect(v);
  return out.sort((a, b) => (a[0] ?? "").localeCompare(b[0] ?? ""));
}

/** Every cross-area relative import of the non-test TypeScript under `roots`. */
export function crossImports(
  root: string,
  roots: string[],
): { from: string; to: string; file: string; target: string }[] {
  const out: { from: string; to: string; file: string; target: string }[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(join(root, dir), { withFileTypes: true })) {
      const rel = join(dir, e.name);
      if (e.isDirectory()) {
        if (e.name !== "node_modules" && e.name !== "dist") walk(rel);
        continue;
      }
      if (!/\.tsx?$/.test(e.name) || /\.test(-helper)?\.ts$/.test(e.name)) continue;
      const text = readFileSync(join(root, rel), "utf8");
      for (const m of text.matchAll(IMPORT)) {
        const target = normalize(join(dirname(rel), m[1] ?? ""));
        const from = areaOf(rel);
        const to = areaOf(target);
        if (from !== undefined && to !== undefined && from !== to) out.push({ from, to, file: rel, target });
      }
    }
  };
  for (const r of roots) walk(r);
  return out;
}

/** A cycle in the allowed-imports graph, or undefined. */
export function findCycle(rules: ReadonlyMap<string, ReadonlySet<string>>): string[] | undefined {
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (a: string): string[] | undefined => {
    if (state.get(a) === "done") return undefined;
    if (state.get(a) === "open") return [...stack.slice(stack.indexOf(a)), a];
    state.set(a, "open");
    stack.push(a);
    for (const b of rules.get(a) ?? []) {
      const c = visit(b);
      if (c) return c;
    }
    stack.pop();
    state.set(a, "done");
    return undefined;
  };
  for (const a of rules.keys()) {
    const c = visit(a);
    if (c) return c;
  }
  return undefined;
}

describe("architecture: import directions", () => {
  const rules = layerRules(readFileSync(join(repo, "docs/architecture.md"), "utf8"));

  it("every import between areas runs the way docs/architecture.md allows", () => {
    const wrong = crossImports(repo, ["src", "ui/src"])
      .filter((e) => !(rules.get(e.from)?.has(e.to) ?? false))
      .map((e) => `${e.file} → ${relative(repo, join(repo, e.target))} (${e.from} may not import ${e.to})`);
    assert.deepEqual(wrong, []);
  });

  it("every folder of src/ has a row, and every row a folder", () => {
    const areas = new Set<string>(["ui"]);
    for (const e of readdirSync(join(repo, "src"), { withFileTypes: true })) {
      if (!e.isDirectory()) continue;
      if (e.name !== "core") areas.add(e.name);
      else
        for (const c of readdirSync(join(repo, "src/core"), { withFileTypes: true }))
          if (c.isDirectory()) areas.add(`core/${c.name}`);
    }
    assert.deepEqual([...areas].sort(), [...rules.keys()].sort());
    for (const [a, allowed] of rules)
      for (const b of allowed) assert.ok(rules.has(b), `row ${a} allows unknown area ${b}`);
  });

  it("the allowed imports form no cycle", () => {
    assert.equal(findCycle(rules), undefined);
  });

  it("no files import each other in a circle (type-only imports included)", () => {
    assert.deepEqual(
      importCycles(importGraph(repo, ["src", "ui/src"])).map((c) => `import circle: ${c.join(", ")}`),
      [],
    );
  });

  it("the UI reads src/ only through dto.ts types and src/policy, which uses no Node.js module", () => {
    // Vite bundles what the UI imports from src/: a value import that reached Node.js or I/O would
    // break the browser build, so the UI's one shared runtime code is src/policy (pure).
    const wrong = crossImports(repo, ["ui/src"])
      .filter((e) => e.to !== "policy" && !(e.to === "dashboard" && e.target === "src/dashboard/dto.ts"))
      .map((e) => `${e.file} → ${e.target}`);
    assert.deepEqual(wrong, []);
    const policyFiles = [...importGraph(repo, ["src/policy"]).keys()];
    assert.ok(policyFiles.length > 0);
    const nodeImports = policyFiles.filter((f) =>
      /from\s*["']node:/.test(readFileSync(join(repo, f), "utf8")),
    );
    assert.deepEqual(nodeImports, []);
  });

  it("fails on an import circle between files", () => {
    // A synthetic graph: a → b → c → a is one circle, d → d another, e → a none.
    const g = new Map([
      ["a.ts", new Set(["b.ts"])],
      ["b.ts", new Set(["c.ts"])],
      ["c.ts", new Set(["a.ts"])],
      ["d.ts", new Set(["d.ts"])],
      ["e.ts", new Set(["a.ts"])],
    ]);
    assert.deepEqual(importCycles(g), [["a.ts", "b.ts", "c.ts"], ["d.ts"]]);
    assert.deepEqual(importCycles(new Map([["a.ts", new Set(["b.ts"])]])), []);
  });

  it("fails on an import that runs the wrong way", () => {
    // The check itself must be able to fail: a synthetic graph with the old core → agent lean.
    const r = layerRules("## Layers\n| `agent` | `wire` |\n| `core/ingest` | `wire` |\n| `wire` | — |\n");
    assert.equal(r.get("core/ingest")?.has("agent"), false);
    assert.deepEqual(
      findCycle(
        new Map([
          ["a", new Set(["b"])],
          ["b", new Set(["a"])],
        ]),
      ),
      ["a", "b", "a"],
    );
    assert.equal(areaOf("src/core/ingest/core.ts"), "core/ingest");
    assert.equal(areaOf("src/agent/agent.ts"), "agent");
  });
});
