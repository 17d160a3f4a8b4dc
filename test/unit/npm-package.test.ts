// `npm i -g` of Wave's npm package (`npm run pack`, hack/pack/pack.sh) gives a working `wave`:
// Node does not strip types under node_modules, so the package must be compiled JavaScript. Packs
// the package (without the UI bundle, which the CLI does not need), installs it into a temporary
// global prefix with the npm client (runtime dependencies from its cache or registry) and runs the
// installed `wave version` and `wave --help`.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { packageManifest } from "../../hack/pack/manifest.ts";

const root = new URL("../../", import.meta.url).pathname;
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
  name: string;
  version: string;
  description: string;
  license: string;
  engines: Record<string, string>;
  dependencies: Record<string, string>;
};
// Node 24 (this test's) first on PATH: the installed `wave` starts with `#!/usr/bin/env node`.
const env = { ...process.env, PATH: `${dirname(process.execPath)}:${process.env["PATH"] ?? ""}` };

function files(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => join(d.parentPath, d.name));
}

describe("npm package", () => {
  it("its package.json: the repository's name, version and runtime dependencies, bin/wave.js, no scripts", () => {
    const m = packageManifest(pkg);
    assert.equal(m["name"], pkg.name);
    assert.equal(m["version"], pkg.version);
    assert.deepEqual(m["dependencies"], pkg.dependencies);
    assert.deepEqual(m["bin"], { wave: "./bin/wave.js" });
    assert.equal(m["scripts"], undefined);
    assert.equal(m["devDependencies"], undefined);
  });

  it(
    "npm i -g of the packed tarball installs a `wave` that runs `version` and `--help`",
    { timeout: 600_000 },
    () => {
      const tgz = execFileSync("npm", ["run", "--silent", "pack"], {
        cwd: root,
        env: { ...env, WAVE_PACK_UI: "skip" },
        encoding: "utf8",
      })
        .trim()
        .split("\n")
        .at(-1);
      assert.equal(tgz, `dist/npm/${pkg.name}-${pkg.version}.tgz`);
      const prefix = mkdtempSync(join(tmpdir(), "wave-npm-global-"));
      // npm 11's strict-allow-scripts preflight (this repo's .npmrc) reads <prefix>/lib before it
      // makes it: a fresh global prefix would fail with ENOENT.
      mkdirSync(join(prefix, "lib"), { recursive: true });
      try {
        execFileSync(
          "npm",
          [
            "install",
            "--global",
            "--prefix",
            prefix,
            "--prefer-offline",
            "--no-audit",
            "--no-fund",
            join(root, tgz),
          ],
          { env, stdio: ["ignore", "ignore", "pipe"] },
        );
        const installed = join(prefix, "lib", "node_modules", pkg.name);
        // Compiled: not a TypeScript file in the package, and no module names a .ts file at run time.
        const own = files(installed).filter((f) => !f.startsWith(join(installed, "node_modules")));
        assert.deepEqual(
          own.filter((f) => f.endsWith(".ts")),
          [],
        );
        const tsRefs = own
          .filter((f) => f.endsWith(".js"))
          .filter((f) => /(from |import\(|new URL\()\s*"\.{1,2}\/[^"]*\.ts"/.test(readFileSync(f, "utf8")));
        assert.deepEqual(tsRefs, []);

        const wave = join(prefix, "bin", "wave");
        const version = execFileSync(wave, ["version"], { env, encoding: "utf8" });
        assert.match(version, new RegExp(`^wave ${pkg.version.replaceAll(".", "\\.")} \\(node v24\\.`));
        const help = execFileSync(wave, ["--help"], { env, encoding: "utf8" });
        assert.match(help, /^Usage: wave <command> \[flags\]$/m);
        assert.match(help, /^Commands:$/m);
      } finally {
        rmSync(prefix, { recursive: true, force: true });
      }
    },
  );
});
