// Issue 42: npm ran libxmljs2's install script although package.json's allowScripts did not list
// it — npm 11 treats the field as advice (unreviewed scripts run with a notice) unless
// strict-allow-scripts is on. Every locked package with an install script must be listed, and
// .npmrc must make an unlisted one fail the install.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";

const root = new URL("../../", import.meta.url);
const read = (f: string): string => readFileSync(new URL(f, root), "utf8");

describe("install scripts (issue 42)", () => {
  it("lists every locked package with an install script in allowScripts, and .npmrc enforces the list", () => {
    const lock = JSON.parse(read("package-lock.json")) as {
      packages: Record<string, { hasInstallScript?: boolean }>;
    };
    const allow =
      (JSON.parse(read("package.json")) as { allowScripts?: Record<string, boolean> }).allowScripts ?? {};
    const withScripts = Object.entries(lock.packages)
      .filter(([, p]) => p.hasInstallScript === true)
      .map(([path]) => path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length));
    assert.ok(withScripts.includes("libxmljs2"), "the lockfile still has libxmljs2");
    assert.deepEqual(
      withScripts.filter((name) => typeof allow[name] !== "boolean"),
      [],
      "install scripts allowScripts does not decide",
    );
    assert.equal(
      allow.libxmljs2,
      false,
      "libxmljs2 (XML SBOM validation; the release writes JSON) builds nothing",
    );
    const npmrc = read(".npmrc")
      .split("\n")
      .map((l) => l.trim());
    assert.ok(npmrc.includes("strict-allow-scripts=true"), ".npmrc: strict-allow-scripts=true");
  });
});
