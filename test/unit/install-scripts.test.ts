// Issue 42: npm ran libxmljs2's install script although package.json's allowScripts did not list
// it — npm 11 treats the field as advice (unreviewed scripts run with a notice) unless
// strict-allow-scripts is on. Every locked package with an install script must be listed, and
// .npmrc must make an unlisted one fail the install. Issue 44: the SBOM generator that brought
// libxmljs2 (and 157 of the root's 579 packages) is release-only, so it has its own pinned manifest
// and lockfile in hack/release, installed on demand without optional dependencies or scripts.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";

const root = new URL("../../", import.meta.url);
const read = (f: string): string => readFileSync(new URL(f, root), "utf8");

interface Lock {
  packages: Record<string, { version?: string; resolved?: string; hasInstallScript?: boolean }>;
}
interface Manifest {
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  allowScripts?: Record<string, boolean>;
}

const nameOf = (path: string): string =>
  path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length);

// A project directory ("" or "hack/release/"): its lockfile's packages with install scripts must
// each be decided in its allowScripts, and its .npmrc must enforce that.
function checkScripts(dir: string): { lock: Lock; manifest: Manifest; withScripts: string[] } {
  const lock = JSON.parse(read(`${dir}package-lock.json`)) as Lock;
  const manifest = JSON.parse(read(`${dir}package.json`)) as Manifest;
  const allow = manifest.allowScripts ?? {};
  const withScripts = Object.entries(lock.packages)
    .filter(([, p]) => p.hasInstallScript === true)
    .map(([path]) => nameOf(path));
  assert.deepEqual(
    withScripts.filter((name) => typeof allow[name] !== "boolean"),
    [],
    `${dir}package.json: install scripts allowScripts does not decide`,
  );
  const npmrc = read(`${dir}.npmrc`)
    .split("\n")
    .map((l) => l.trim());
  assert.ok(npmrc.includes("strict-allow-scripts=true"), `${dir}.npmrc: strict-allow-scripts=true`);
  return { lock, manifest, withScripts };
}

describe("install scripts (issue 42)", () => {
  it("lists every locked package with an install script in allowScripts, and .npmrc enforces the list", () => {
    checkScripts("");
    const { manifest, withScripts } = checkScripts("hack/release/");
    assert.ok(withScripts.includes("libxmljs2"), "the release tools' lockfile still has libxmljs2");
    assert.equal(
      manifest.allowScripts?.libxmljs2,
      false,
      "libxmljs2 (XML SBOM validation; the release writes JSON) builds nothing",
    );
  });
});

describe("release-only tools out of the root install (issue 44)", () => {
  it("keeps the SBOM generator and libxmljs2 out of the root manifest and lockfile", () => {
    const manifest = JSON.parse(read("package.json")) as Manifest;
    const lock = JSON.parse(read("package-lock.json")) as Lock;
    const names = Object.keys(lock.packages).map(nameOf);
    for (const name of ["@cyclonedx/cyclonedx-npm", "@cyclonedx/cyclonedx-library", "libxmljs2"]) {
      assert.ok(!names.includes(name), `root package-lock.json has ${name}`);
      assert.equal(manifest.devDependencies?.[name], undefined, `root package.json has ${name}`);
    }
  });

  it("pins the release tools exactly in hack/release, locked without registry addresses", () => {
    const manifest = JSON.parse(read("hack/release/package.json")) as Manifest;
    const lock = JSON.parse(read("hack/release/package-lock.json")) as Lock;
    const deps = Object.entries(manifest.dependencies ?? {});
    assert.ok(deps.some(([name]) => name === "@cyclonedx/cyclonedx-npm"));
    for (const [name, range] of deps) {
      assert.match(range, /^\d+\.\d+\.\d+$/, `${name}: an exact version, not ${range}`);
      assert.equal(lock.packages[`node_modules/${name}`]?.version, range, `${name}: locked as pinned`);
    }
    const resolved = Object.values(lock.packages).filter((p) => p.resolved !== undefined);
    assert.deepEqual(resolved, [], "hack/release/package-lock.json: resolved fields (.npmrc omits them)");
    assert.ok(read("hack/release/.npmrc").includes("omit-lockfile-registry-resolved=true"));
  });

  it("installs them on demand with npm ci, without optional dependencies or install scripts", () => {
    const sbom = read("hack/release/sbom.sh");
    const ci = sbom.split("\n").find((l) => /^\s*npm ci /.test(l)) ?? "";
    for (const flag of ["--prefix", "--omit=optional", "--ignore-scripts"]) assert.ok(ci.includes(flag), ci);
    assert.match(sbom, /node_modules\/\.bin\/cyclonedx-npm" --omit dev/);
    assert.doesNotMatch(sbom + read("hack/release/release.sh"), /\bnpx\b/, "no floating npx");
    assert.match(
      read("hack/release/release.sh"),
      /sh hack\/release\/sbom\.sh "\$out\/wave-\$version\.cdx\.json"/,
    );
  });
});
