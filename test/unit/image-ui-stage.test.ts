// The image's UI stage builds the bundle from `ui/` plus only the src/ folders it copies: every
// folder of src/ the UI imports at runtime (not `import type`, which the bundler drops) must be
// among them, or `npm run image:build` fails at `vite build` while `npm test` stays green.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("../..", import.meta.url));
const RUNTIME_IMPORT = /^\s*import\s+(?!type\b)[^;]*?from\s+["'](\.{1,2}\/[^"']+)["']/gms;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return /\.tsx?$/.test(e.name) ? [p] : [];
  });
}

/** src/ folders (first level) that files under `root` import at runtime. */
export function runtimeSrcFolders(files: { path: string; text: string }[]): string[] {
  const out = new Set<string>();
  for (const f of files)
    for (const m of f.text.matchAll(RUNTIME_IMPORT)) {
      const target = relative(repo, resolve(dirname(f.path), m[1] ?? ""));
      const [top, folder] = target.split("/");
      if (top === "src" && folder) out.add(folder);
    }
  return [...out].sort();
}

/** The src/ folders the Dockerfile's `ui` stage copies. */
export function uiStageCopies(dockerfile: string): string[] {
  const stage = dockerfile.split(/^FROM /m).find((s) => /\bAS ui\b/.test(s.split("\n")[0] ?? "")) ?? "";
  return [...stage.matchAll(/^COPY src\/([\w-]+)\s/gm)].map((m) => m[1] ?? "").sort();
}

describe("image: the UI stage has what the UI bundles", () => {
  it("copies every src/ folder the UI imports at runtime", () => {
    const files = sources(join(repo, "ui/src")).map((path) => ({ path, text: readFileSync(path, "utf8") }));
    const needed = runtimeSrcFolders(files);
    assert.ok(needed.includes("policy"), "the UI takes src/policy at runtime (ADR 0022)");
    const copied = uiStageCopies(readFileSync(join(repo, "Dockerfile"), "utf8"));
    assert.deepEqual(
      needed.filter((f) => !copied.includes(f)),
      [],
      `the Dockerfile's ui stage copies ${copied.join(", ")}`,
    );
  });

  it("tells runtime imports from type-only ones", () => {
    const path = join(repo, "ui/src/x.ts");
    const text = [
      'import type { A } from "../../src/dashboard/dto.ts";',
      'import { b } from "../../src/policy/spot.ts";',
      'import {\n  c,\n} from "../../src/kube/kinds.ts";',
    ].join("\n");
    assert.deepEqual(runtimeSrcFolders([{ path, text }]), ["kube", "policy"]);
    assert.deepEqual(
      uiStageCopies(
        "FROM x AS ui\nCOPY ui ./ui\nCOPY src/policy ./src/policy\nFROM y AS deps\nCOPY src/kube ./k\n",
      ),
      ["policy"],
    );
  });
});
