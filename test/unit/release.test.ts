// `npm run release` (hack/release/release.sh) without building anything: its --dry-run plan names
// the artifacts and refuses a chart whose version or appVersion is not package.json's; the image it
// saves carries the OCI labels the Dockerfile declares from hack/image/build.sh's build args.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const root = new URL("../../", import.meta.url).pathname;
const version = (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string }).version;

function dryRun(cwd: string): { rc: number; out: string } {
  try {
    const out = execFileSync("sh", [join(cwd, "hack/release/release.sh"), "--dry-run"], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
    return { rc: 0, out };
  } catch (err) {
    const e = err as { status: number; stdout: string; stderr: string };
    return { rc: e.status, out: e.stdout + e.stderr };
  }
}

describe("npm run release", () => {
  it("plans the chart, the image archive per platform, the SBOM and SHA256SUMS under dist/release/<version>", () => {
    const { rc, out } = dryRun(root);
    assert.equal(rc, 0, out);
    assert.match(out, new RegExp(`into dist/release/${version.replaceAll(".", "\\.")}\\n`));
    const artifacts = [...out.matchAll(/^release: artifact (\S+)$/gm)].map((m) => m[1]);
    const platforms = (/^release: platforms (.*)$/m.exec(out)?.[1] ?? "").trim().split(/\s+/);
    assert.ok(platforms.length >= 1 && platforms.every((p) => /^linux\/(amd64|arm64)$/.test(p)), out);
    assert.deepEqual(artifacts, [
      `wave-${version}.tgz`,
      `wave-${version}-npm.tgz`,
      ...platforms.map((p) => `wave-${version}-${p.replace("/", "-")}.tar.gz`),
      `wave-${version}.cdx.json`,
      "SHA256SUMS",
    ]);
    // Without arm64 the plan says why.
    if (!platforms.includes("linux/arm64")) assert.match(out, /linux\/arm64 skipped: .+/);
  });

  it("has the chart's version and appVersion equal to package.json's", () => {
    const chart = readFileSync(join(root, "deploy/helm/wave/Chart.yaml"), "utf8");
    assert.equal(/^version: "?([^"\s]+)"?$/m.exec(chart)?.[1], version);
    assert.equal(/^appVersion: "?([^"\s]+)"?$/m.exec(chart)?.[1], version);
    assert.match(dryRun(root).out, new RegExp(`chart version ${version}, appVersion ${version}`));
  });

  it("refuses a chart whose appVersion is not package.json's version", () => {
    const dir = mkdtempSync(join(tmpdir(), "wave-release-"));
    try {
      // Not hack/release/node_modules (the release tools sbom.sh installs on demand).
      cpSync(join(root, "hack/release"), join(dir, "hack/release"), {
        recursive: true,
        filter: (src) => !src.includes("/node_modules"),
      });
      cpSync(join(root, "package.json"), join(dir, "package.json"));
      const chart = readFileSync(join(root, "deploy/helm/wave/Chart.yaml"), "utf8");
      cpSync(join(root, "deploy/helm/wave/Chart.yaml"), join(dir, "deploy/helm/wave/Chart.yaml"));
      writeFileSync(
        join(dir, "deploy/helm/wave/Chart.yaml"),
        chart.replace(/^appVersion: .*$/m, 'appVersion: "9.9.9"'),
      );
      const { rc, out } = dryRun(dir);
      assert.equal(rc, 1, out);
      assert.match(out, /appVersion 9\.9\.9; package\.json has .*: make them equal/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("image OCI labels", () => {
  const dockerfile = readFileSync(join(root, "Dockerfile"), "utf8");
  const final = dockerfile.slice(dockerfile.lastIndexOf("\nFROM "));
  const build = readFileSync(join(root, "hack/image/build.sh"), "utf8");

  it("declares title, description, licenses and vendor in the Dockerfile's final stage", () => {
    for (const l of ["title", "description", "licenses", "vendor"]) {
      assert.match(final, new RegExp(`org\\.opencontainers\\.image\\.${l}="[^"$]+"`), l);
    }
    assert.match(final, /org\.opencontainers\.image\.licenses="Apache-2\.0"/);
  });

  it("sets version, revision, created and source per build as podman build --label (not cached build args)", () => {
    for (const [l, v] of [
      ["version", "$version"],
      ["revision", "$revision"],
      ["created", "$created"],
      ["source", "$source_url"],
    ]) {
      assert.ok(build.includes(`--label "org.opencontainers.image.${l}=${v}"`), l);
      // A build arg in the Dockerfile's LABEL would be stale on a cached build (buildah 1.28).
      assert.doesNotMatch(final, new RegExp(`image\\.${l}=`), l);
    }
    assert.match(build, /revision="\$\(git rev-parse HEAD/);
    assert.match(build, /created="\$\(date -u -d "@\$epoch"/);
  });
});
