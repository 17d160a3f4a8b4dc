// Size limits of issue 27 for the read side's shells: under src/api and src/views no function is
// over 80 lines and no file over 400 (tests excluded). Functions are found with TypeScript's own
// parser (declarations, methods, arrows and function expressions, nested ones on their own).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const repo = fileURLToPath(new URL("../..", import.meta.url));
const ROOTS = ["src/api", "src/views"];
const MAX_FUNCTION_LINES = 80;
const MAX_FILE_LINES = 400;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return e.name.endsWith(".ts") && !e.name.endsWith(".test.ts") ? [p] : [];
  });
}

/** Every function of `text` longer than `max` lines: "name:line (n lines)". */
export function longFunctions(file: string, text: string, max: number): string[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const out: string[] = [];
  const visit = (n: ts.Node): void => {
    if (ts.isFunctionLike(n) && "body" in n && n.body) {
      const from = sf.getLineAndCharacterOfPosition(n.getStart(sf)).line;
      const to = sf.getLineAndCharacterOfPosition(n.getEnd()).line;
      const lines = to - from + 1;
      const name = n.name && ts.isIdentifier(n.name) ? n.name.text : "(anonymous)";
      if (lines > max) out.push(`${name}:${from + 1} (${lines} lines)`);
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

describe("code size: the read side's shells stay small", () => {
  const files = ROOTS.flatMap((r) => sources(join(repo, r)));

  it(`no function over ${MAX_FUNCTION_LINES} lines under ${ROOTS.join(", ")}`, () => {
    const long = files.flatMap((f) =>
      longFunctions(f, readFileSync(f, "utf8"), MAX_FUNCTION_LINES).map((x) => `${relative(repo, f)} ${x}`),
    );
    assert.deepEqual(long, []);
  });

  it(`no file over ${MAX_FILE_LINES} lines under ${ROOTS.join(", ")}`, () => {
    const big = files
      .map((f) => ({ f: relative(repo, f), n: readFileSync(f, "utf8").split("\n").length }))
      .filter((x) => x.n > MAX_FILE_LINES)
      .map((x) => `${x.f} (${x.n} lines)`);
    assert.deepEqual(big, []);
  });

  it("finds a long arrow function inside a call, and not a short one", () => {
    const body = Array.from({ length: 5 }, (_, i) => `  const v${i} = ${i};`).join("\n");
    const text = `app.get("/x", async () => {\n${body}\n});\nfunction short() {\n  return 1;\n}\n`;
    assert.deepEqual(longFunctions("x.ts", text, 6), ["(anonymous):1 (7 lines)"]);
    assert.deepEqual(longFunctions("x.ts", text, 7), []);
  });
});
