// The real node's local OCI registry (distribution v3, built from hack/rig/registry into
// .rig/cache/registry@<version>/): images are pushed to it and the node pulls from it over
// loopback. See docs/rig.md "Real node".
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { cacheDir, logFile, rigSrcDir } from "./lib.ts";
import { registryConfig, registryVersion } from "./real-node.ts";

const CMD = "github.com/distribution/distribution/v3/cmd/registry";

/** Build the registry once per version and Go version (stamped like the rig's other binaries). */
export function registryBinary(say: (msg: string) => void): string {
  const src = join(rigSrcDir, "registry");
  const version = registryVersion(readFileSync(join(src, "go.mod"), "utf8"));
  const out = join(cacheDir, `registry@${version}`, "registry");
  const env = { ...process.env, CGO_ENABLED: "0", GOFLAGS: "-buildvcs=false" };
  const goVersion = spawnSync("go", ["env", "GOVERSION"], { encoding: "utf8" }).stdout.trim();
  const stamp = `REGISTRY_VERSION=${version} ${goVersion} CGO_ENABLED=0 -trimpath -ldflags=-s -w registry\n`;
  if (existsSync(out) && existsSync(`${out}.stamp`) && readFileSync(`${out}.stamp`, "utf8") === stamp)
    return out;
  mkdirSync(dirname(out), { recursive: true });
  const log = logFile(`build-registry@${version}`);
  say(`building registry ${version} (-p 1); log: ${log}`);
  const t0 = Date.now();
  const args = ["build", "-p", "1", "-trimpath", "-ldflags=-s -w", "-o", out, CMD];
  const r = spawnSync("go", args, { cwd: src, env, encoding: "utf8" });
  writeFileSync(log, `$ go ${args.join(" ")}\n${r.stdout}${r.stderr}`);
  if (r.status !== 0) throw new Error(`go build ${CMD} failed; log: ${log}`);
  writeFileSync(`${out}.stamp`, stamp);
  say(`built registry ${version} in ${((Date.now() - t0) / 1000).toFixed(0)}s`);
  return out;
}

/** Start the registry on 127.0.0.1:`port`, storing under `dir`; returns its pid. */
export function startRegistry(bin: string, dir: string, port: number): number {
  mkdirSync(join(dir, "storage"), { recursive: true });
  const config = join(dir, "config.json");
  writeFileSync(config, JSON.stringify(registryConfig(join(dir, "storage"), port), null, 2) + "\n");
  const fd = openSync(logFile("real-node-registry"), "a");
  const child = spawn(bin, ["serve", config], { detached: true, stdio: ["ignore", fd, fd] });
  child.unref();
  if (child.pid === undefined) throw new Error("start registry: spawn failed");
  return child.pid;
}

/** The bandwidth limit in front of the registry (registry-throttle.ts, on this Node); its pid. */
export function startThrottle(listen: number, upstream: number, mbPerSec: number): number {
  const script = join(rigSrcDir, "registry-throttle.ts");
  const fd = openSync(logFile("real-node-registry-throttle"), "a");
  const args = [script, String(listen), String(upstream), String(mbPerSec)];
  const child = spawn(process.execPath, args, { detached: true, stdio: ["ignore", fd, fd] });
  child.unref();
  if (child.pid === undefined) throw new Error("start registry throttle: spawn failed");
  return child.pid;
}
