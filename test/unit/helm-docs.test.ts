// The chart README's values table is generated from the `## @param` comments in values.yaml by
// `npm run helm:docs` (@bitnami/readme-generator-for-helm, offline, under a second). This test
// regenerates it into a temporary copy and fails when the committed README differs: a value added,
// renamed or re-defaulted without `npm run helm:docs`, or a value without its `## @param` comment.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const root = new URL("../../", import.meta.url).pathname;
const chart = join(root, "deploy/helm/wave");
const generator = join(root, "node_modules/@bitnami/readme-generator-for-helm/bin/index.js");

function generate(values: string, readme: string): void {
  try {
    execFileSync(process.execPath, [generator, "--values", values, "--readme", readme], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
  } catch (err) {
    const out = (err as { stdout?: string }).stdout ?? "";
    const errors = out.split("\n").filter((l) => l.startsWith("ERROR"));
    assert.fail(`readme-generator failed:\n${errors.join("\n") || out}`);
  }
}

describe("helm chart README values table", () => {
  it("is what npm run helm:docs generates from values.yaml (no drift)", () => {
    const dir = mkdtempSync(join(tmpdir(), "wave-helm-docs-"));
    try {
      const readme = join(dir, "README.md");
      copyFileSync(join(chart, "README.md"), readme);
      generate(join(chart, "values.yaml"), readme);
      const committed = readFileSync(join(chart, "README.md"), "utf8");
      assert.equal(
        committed,
        readFileSync(readme, "utf8"),
        "deploy/helm/wave/README.md is stale: run npm run helm:docs",
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("documents every value: a value without its ## @param comment fails the generator", () => {
    const dir = mkdtempSync(join(tmpdir(), "wave-helm-docs-"));
    try {
      const values = join(dir, "values.yaml");
      const readme = join(dir, "README.md");
      copyFileSync(join(chart, "README.md"), readme);
      const text = readFileSync(join(chart, "values.yaml"), "utf8");
      // Drop one @param line: the generator must refuse with "Missing metadata".
      const dropped = text.replace(/^\s*## @param clusterId .*\n/m, "");
      assert.notEqual(dropped, text);
      writeFileSync(values, dropped);
      assert.throws(() => generate(values, readme), /Missing metadata for key: clusterId/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
