// Starts and stops the rig's opt-in real node (configuration: real-node.ts; docs/rig.md "Real node").
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";
import {
  binDir,
  cacheDir,
  dataDir,
  freePorts,
  kubectlRaw,
  logFile,
  pkiDir,
  rigSrcDir,
  runDir,
  sleep,
} from "./lib.ts";
import {
  PAUSE_IMAGE,
  REAL_NODE_NAME,
  cniConfig,
  containerdConfig,
  kubeletArgs,
  kubeletConfig,
  nodeCertSubject,
  nodeKubeconfig,
  ociLayout,
  paths,
  registryMBps,
  type RealNodeLayout,
} from "./real-node.ts";
import { registryBinary, startRegistry, startThrottle } from "./real-node-registry.ts";

const statePath = join(runDir, "real-node.json");
/** Debian packages (containerd, containernetworking-plugins, runc): `apt-get install` them. */
const CONTAINERD = "/usr/bin/containerd";
const CTR = "/usr/bin/ctr";
const HOST_TOOLS = { cniBinDir: "/usr/lib/cni", runc: "/usr/sbin/runc" };

function say(msg: string): void {
  process.stderr.write(`[rig] real node: ${msg}\n`);
}

function run(cmd: string, args: string[], what: string, cwd?: string): string {
  const r = spawnSync(cmd, args, { cwd, encoding: "utf8", maxBuffer: 16 * 1024 * 1024 });
  if (r.error !== undefined || r.status !== 0) {
    throw new Error(`${what}: ${cmd} ${args.join(" ")} failed: ${r.error?.message ?? r.stderr.trim()}`);
  }
  return r.stdout;
}

function exeOf(pid: number): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/exe`).replace(/ \(deleted\)$/, "");
  } catch {
    return undefined;
  }
}

function startDetached(name: string, bin: string, args: string[]): number {
  const fd = openSync(logFile(name), "a");
  writeFileSync(logFile(name), `\n# ${new Date().toISOString()} ${bin} ${args.join(" ")}\n`, { flag: "a" });
  const child = spawn(bin, args, { detached: true, stdio: ["ignore", fd, fd] });
  child.unref();
  if (child.pid === undefined) throw new Error(`start ${name}: spawn failed`);
  return child.pid;
}

interface RealNodeState {
  layout: RealNodeLayout;
  pids: { containerd: number; kubelet: number; registry: number; throttle: number };
  exes: { containerd: string; kubelet: string; registry: string; throttle: string };
}

export function readRealNode(): RealNodeState | undefined {
  if (!existsSync(statePath)) return undefined;
  return JSON.parse(readFileSync(statePath, "utf8")) as RealNodeState;
}

/** The pause program, built once per Go version and source into .rig/cache/pause/. */
function pauseBinary(): string {
  const src = join(rigSrcDir, "pause");
  const out = join(cacheDir, "pause", "pause");
  const source = createHash("sha256")
    .update(readFileSync(join(src, "main.go")))
    .digest("hex");
  const stamp = `${run("go", ["env", "GOVERSION"], "go").trim()} ${source}\n`;
  if (existsSync(out) && existsSync(`${out}.stamp`) && readFileSync(`${out}.stamp`, "utf8") === stamp)
    return out;
  mkdirSync(dirname(out), { recursive: true });
  const env = { ...process.env, CGO_ENABLED: "0", GOFLAGS: "-buildvcs=false" };
  const r = spawnSync("go", ["build", "-trimpath", "-ldflags=-s -w", "-o", out, "."], {
    cwd: src,
    env,
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`build pause: ${r.stderr}`);
  writeFileSync(`${out}.stamp`, stamp);
  return out;
}

/** Import the pause image into containerd's k8s.io namespace from an OCI layout tarball. */
function importPause(l: RealNodeLayout): void {
  const work = join(l.dir, "pause-image");
  rmSync(work, { recursive: true, force: true });
  mkdirSync(join(work, "rootfs"), { recursive: true });
  writeFileSync(join(work, "rootfs", "pause"), readFileSync(pauseBinary()), { mode: 0o755 });
  const tarArgs = ["--owner=0", "--group=0", "--numeric-owner", "--mtime=@0", "-cf", "-", "pause"];
  const layer = spawnSync("tar", tarArgs, { cwd: join(work, "rootfs"), maxBuffer: 64 * 1024 * 1024 }).stdout;
  const layoutDir = join(work, "oci");
  for (const [file, content] of ociLayout(layer, PAUSE_IMAGE, ["/pause"])) {
    mkdirSync(dirname(join(layoutDir, file)), { recursive: true });
    writeFileSync(join(layoutDir, file), content);
  }
  run("tar", ["-C", layoutDir, "-cf", join(work, "image.tar"), "."], "pack pause image");
  run(
    CTR,
    ["--address", paths(l).socket, "-n", "k8s.io", "images", "import", join(work, "image.tar")],
    "import pause",
  );
}

function writeConfigs(l: RealNodeLayout): void {
  const p = paths(l);
  for (const d of [dirname(p.containerdConfig), p.cniConfDir, p.kubeletRoot, join(l.dir, "pki")]) {
    mkdirSync(d, { recursive: true });
  }
  writeFileSync(p.containerdConfig, containerdConfig(l));
  writeFileSync(join(p.cniConfDir, "10-wave-real.conflist"), JSON.stringify(cniConfig(l), null, 2) + "\n");
  writeFileSync(p.kubeletConfig, JSON.stringify(kubeletConfig(l), null, 2) + "\n");
  writeFileSync(p.kubeconfig, JSON.stringify(nodeKubeconfig(l), null, 2) + "\n", { mode: 0o600 });
  const ssl = (args: string[]): string => run("openssl", args, "node certificate", join(l.dir, "pki"));
  ssl(["genrsa", "-out", p.key, "2048"]);
  ssl(["req", "-new", "-key", p.key, "-subj", nodeCertSubject(l.name), "-out", "kubelet.csr"]);
  writeFileSync(
    join(l.dir, "pki", "kubelet.ext"),
    "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n",
  );
  const ca = (f: string): string => join(pkiDir, f);
  ssl(
    ["x509", "-req", "-in", "kubelet.csr", "-CA", ca("ca.crt"), "-CAkey", ca("ca.key")].concat([
      "-CAcreateserial",
      "-CAserial",
      "ca.srl",
      "-out",
      p.cert,
      "-days",
      "365",
      "-extfile",
      "kubelet.ext",
    ]),
  );
}

/** The bridge exists before the kubelet starts: its address is the node's IP. */
function ensureBridge(l: RealNodeLayout): void {
  if (spawnSync("ip", ["link", "show", l.bridge]).status !== 0) {
    run("ip", ["link", "add", l.bridge, "type", "bridge"], "bridge");
  }
  const prefix = l.podCIDR.split("/")[1] ?? "24";
  if (!run("ip", ["-o", "addr", "show", l.bridge], "bridge").includes(` ${l.gateway}/`)) {
    run("ip", ["addr", "add", `${l.gateway}/${prefix}`, "dev", l.bridge], "bridge");
  }
  run("ip", ["link", "set", l.bridge, "up"], "bridge");
}

async function until(
  what: string,
  ok: () => Promise<boolean> | boolean,
  ms: number,
  log: string,
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`${what} not ready in ${ms / 1000}s; log: ${log}`);
    await sleep(500);
  }
}

async function nodeReady(name: string): Promise<boolean> {
  const jp = '{.status.conditions[?(@.type=="Ready")].status}';
  const r = await kubectlRaw(["get", "node", name, "-o", `jsonpath=${jp}`], undefined, 10_000);
  return r.code === 0 && r.stdout.trim() === "True";
}

async function newLayout(apiserver: string): Promise<RealNodeLayout> {
  const [kubelet, healthz, stream, push, pull] = await freePorts(5);
  const mbPerSec = registryMBps();
  return {
    name: REAL_NODE_NAME,
    dir: join(dataDir, REAL_NODE_NAME),
    apiserver,
    caFile: join(pkiDir, "ca.crt"),
    bridge: "wavereal0",
    gateway: "10.244.0.1",
    podCIDR: "10.244.0.0/24",
    ports: { kubelet: kubelet ?? 0, healthz: healthz ?? 0, stream: stream ?? 0 },
    ...HOST_TOOLS,
    registry: {
      push: `127.0.0.1:${push ?? 0}`,
      pull: `127.0.0.1:${(mbPerSec > 0 ? pull : push) ?? 0}`,
      mbPerSec,
    },
  };
}

/**
 * Start the registry, containerd and the kubelet beside the running rig; returns when the node is
 * Ready. Each pid is recorded as soon as it exists, so a failed start is still stopped by `down`.
 */
export async function startRealNode(apiserver: string): Promise<RealNodeLayout> {
  const running = readRealNode();
  if (running !== undefined && exeOf(running.pids.kubelet) === running.exes.kubelet) {
    if (await nodeReady(running.layout.name)) {
      say(`${running.layout.name} already running`);
      return running.layout;
    }
  }
  await stopRealNode(true);
  for (const need of [CONTAINERD, CTR, HOST_TOOLS.runc, join(HOST_TOOLS.cniBinDir, "bridge")]) {
    if (!existsSync(need)) {
      throw new Error(`${need} missing: apt-get install containerd containernetworking-plugins runc`);
    }
  }
  const registryBin = registryBinary(say);
  const kubeletBin = join(binDir, "kubelet");
  const l = await newLayout(apiserver);
  const t0 = Date.now();
  unmountUnder(l.dir);
  rmSync(l.dir, { recursive: true, force: true });
  writeConfigs(l);
  ensureBridge(l);
  const state: RealNodeState = {
    layout: l,
    pids: { containerd: 0, kubelet: 0, registry: 0, throttle: 0 },
    exes: { containerd: CONTAINERD, kubelet: kubeletBin, registry: registryBin, throttle: process.execPath },
  };
  const record = (name: keyof RealNodeState["pids"], pid: number): void => {
    state.pids[name] = pid;
    state.exes[name] = exeOf(pid) ?? state.exes[name];
    writeFileSync(statePath, JSON.stringify(state, null, 2) + "\n");
  };
  const reg = l.registry ?? { push: "", pull: "", mbPerSec: 0 };
  const port = (hostPort: string): number => Number(hostPort.split(":")[1]);
  record("registry", startRegistry(registryBin, join(l.dir, "registry"), port(reg.push)));
  if (reg.mbPerSec > 0) record("throttle", startThrottle(port(reg.pull), port(reg.push), reg.mbPerSec));
  const containerdArgs = ["--config", paths(l).containerdConfig];
  record("containerd", startDetached("real-node-containerd", CONTAINERD, containerdArgs));
  const ctrOk = (): boolean => spawnSync(CTR, ["--address", paths(l).socket, "version"]).status === 0;
  await until("containerd", ctrOk, 30_000, logFile("real-node-containerd"));
  importPause(l);
  record("kubelet", startDetached("real-node-kubelet", kubeletBin, kubeletArgs(l)));
  await until(`node ${l.name}`, () => nodeReady(l.name), 90_000, logFile("real-node-kubelet"));
  const secs = ((Date.now() - t0) / 1000).toFixed(1);
  say(
    `${l.name} Ready in ${secs}s (kubelet ${l.gateway}:${l.ports.kubelet}, registry: push ${reg.push}, pull ${reg.pull} at ${reg.mbPerSec || "unlimited"} MB/s)`,
  );
  return l;
}

async function stopPid(name: string, pid: number, exe: string): Promise<void> {
  if (!(pid > 0) || exeOf(pid) !== exe) return;
  say(`stopping ${name} (pid ${pid})`);
  process.kill(pid, "SIGTERM");
  const deadline = Date.now() + 15_000;
  while (exeOf(pid) === exe && Date.now() < deadline) await sleep(200);
  if (exeOf(pid) === exe) process.kill(pid, "SIGKILL");
}

/** Mount points under `dir` (rootfs overlays, shm, netns), deepest first. */
function mountsUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  // .rig may be a symlink (a worktree sharing one rig): mountinfo has the resolved path.
  const real = realpathSync(dir);
  return readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((line) => line.split(" ")[4] ?? "")
    .filter((m) => m.startsWith(`${real}/`))
    .reverse();
}

function unmountUnder(dir: string): void {
  for (const m of mountsUnder(dir)) spawnSync("umount", ["-l", m]);
}

/**
 * Stop the kubelet, every pod's containers (the shims outlive containerd), containerd; unmount
 * what they left under the node's dir, remove the bridge and the Node object.
 */
export async function stopRealNode(quiet = false): Promise<void> {
  const s = readRealNode();
  // Without a state file (a crash before it was written) only the mounts can be left: the rig's
  // fresh start removes .rig/data, which fails on a mount point.
  if (s === undefined) {
    unmountUnder(join(dataDir, REAL_NODE_NAME));
    return;
  }
  const l = s.layout;
  await stopPid("kubelet", s.pids.kubelet, s.exes.kubelet);
  if (exeOf(s.pids.containerd) === s.exes.containerd) {
    const ctr = (args: string[]): string =>
      spawnSync(CTR, ["--address", paths(l).socket, "-n", "k8s.io", ...args], {
        encoding: "utf8",
        timeout: 30_000,
      }).stdout;
    const tasks = ctr(["tasks", "ls", "-q"])
      .split("\n")
      .filter((t) => t !== "");
    for (const t of tasks) ctr(["tasks", "rm", "-f", t]);
    await stopPid("containerd", s.pids.containerd, s.exes.containerd);
  }
  await stopPid("registry throttle", s.pids.throttle, s.exes.throttle);
  await stopPid("registry", s.pids.registry, s.exes.registry);
  unmountUnder(l.dir);
  spawnSync("ip", ["link", "del", l.bridge]);
  await kubectlRaw(["delete", "node", l.name, "--ignore-not-found", "--wait=false"], undefined, 10_000).catch(
    () => undefined,
  );
  rmSync(statePath, { force: true });
  if (!quiet) say("stopped");
}
