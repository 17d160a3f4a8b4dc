// `npm test` builds the tools its chart and alert-rule suites need (helm, promtool) before the unit
// tests, cached in .rig/bin (hack/test/tools.sh): on a fresh clone those suites were skipped
// (issue 44). Here only what runs without a compile: the order in package.json, and the clear
// failure when neither the binaries nor Go are there.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import {
  chmodSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const root = new URL("../../", import.meta.url).pathname;

function inCopy(setup: (dir: string) => void, env: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), "wave-test-tools-"));
  try {
    for (const f of ["hack/test/tools.sh", "hack/helm/build.sh", "hack/prometheus/build.sh"]) {
      cpSync(join(root, f), join(dir, f));
    }
    setup(dir);
    // A PATH with no Go: only the one program tools.sh runs before it looks for go.
    mkdirSync(join(dir, "path"));
    symlinkSync(
      execFileSync("sh", ["-c", "command -v dirname"], { encoding: "utf8" }).trim(),
      join(dir, "path/dirname"),
    );
    const r = spawnSync("/bin/sh", [join(dir, "hack/test/tools.sh")], {
      encoding: "utf8",
      env: { PATH: join(dir, "path"), ...env },
    });
    return { rc: r.status, err: r.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function fakeBinary(dir: string, name: string): string {
  mkdirSync(join(dir, ".rig/bin"), { recursive: true });
  const path = join(dir, ".rig/bin", name);
  writeFileSync(path, "#!/bin/sh\n");
  chmodSync(path, 0o755);
  return path;
}

describe("npm test's helm and promtool (issue 44)", () => {
  it("builds them before the unit tests", () => {
    const scripts = (
      JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { scripts: Record<string, string> }
    ).scripts;
    assert.equal(scripts["test:tools"], "sh hack/test/tools.sh");
    const steps = scripts["test"]?.split("&&").map((s) => s.trim()) ?? [];
    assert.ok(steps.indexOf("npm run test:tools") >= 0, scripts["test"]);
    assert.ok(steps.indexOf("npm run test:tools") < steps.indexOf("npm run test:unit"), scripts["test"]);
  });

  it("fails with what to do when neither the binaries nor Go are there (no silently skipped suites)", () => {
    const { rc, err } = inCopy(() => {});
    assert.equal(rc, 1, err);
    assert.match(
      err,
      /helm promtool missing from \.rig\/bin and no Go toolchain \(go\) to build it: install Go/,
    );
  });

  it("names only what is missing, and uses built binaries without Go", () => {
    const one = inCopy((dir) => fakeBinary(dir, "helm"));
    assert.equal(one.rc, 1, one.err);
    assert.match(one.err, /^test: promtool missing/);
    const both = inCopy((dir) => {
      fakeBinary(dir, "helm");
      fakeBinary(dir, "promtool");
    });
    assert.equal(both.rc, 0, both.err);
  });

  it("takes PROMTOOL= instead of building promtool, and refuses one that is not executable", () => {
    const given = join(tmpdir(), `wave-no-promtool-${process.pid}`);
    const bad = inCopy((dir) => fakeBinary(dir, "helm"), { PROMTOOL: given });
    assert.equal(bad.rc, 1, bad.err);
    assert.match(bad.err, /PROMTOOL=.* is not an executable/);
    const good = inCopy(
      (dir) => {
        fakeBinary(dir, "helm");
        writeFileSync(given, "#!/bin/sh\n");
        chmodSync(given, 0o755);
      },
      { PROMTOOL: given },
    );
    rmSync(given, { force: true });
    assert.equal(good.rc, 0, good.err);
  });
});
