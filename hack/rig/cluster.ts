// Local Kubernetes + Karpenter (KWOK provider) rig, built from Go modules only.
//
//   node hack/rig/cluster.ts build | up | down | status
//
// Everything lives under .rig/ at the repo root (git-ignored): bin/ (binaries + version stamps),
// logs/ (one log per process and per build step), run/ (pid files, state.json), pki/, data/,
// kubeconfig. See docs/rig.md.
import { spawn, spawnSync } from "node:child_process";
import {
  cpSync,
  createWriteStream,
  existsSync,
  linkSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { get as httpGet } from "node:http";
import { get as httpsGet } from "node:https";
import { availableParallelism } from "node:os";
import { dirname, join } from "node:path";
import {
  apiserverReady,
  binDir,
  cacheDir,
  componentBinary,
  componentNames,
  dataDir,
  kubectl,
  kubeconfigPath,
  logFile,
  logsDir,
  pidFile,
  pidRunsBinary,
  pkiDir,
  readPid,
  readState,
  readVersions,
  repoRoot,
  requestedGates,
  requestedKarpenter,
  rigDir,
  rigHealthy,
  rigSrcDir,
  runDir,
  runningPid,
  sleep,
  statePath,
  tailFile,
  freePorts,
  selectPair,
  type ComponentName,
  type RigPair,
  type RigState,
} from "./lib.ts";
import { realNodeRequested } from "./real-node.ts";
import { readRealNode, startRealNode, stopRealNode } from "./real-node-run.ts";

/** Wrapper modules per version (.rig/build/<module>@<version>) and patched module sources. */
const buildDir = join(rigDir, "build");
const srcDir = join(rigDir, "src");

class StepError extends Error {
  readonly step: string;
  readonly log: string | undefined;
  constructor(step: string, message: string, log?: string) {
    super(message);
    this.step = step;
    this.log = log;
  }
}

function say(msg: string): void {
  process.stderr.write(`[rig] ${msg}\n`);
}

function envStr(name: string, fallback: string): string {
  const v = process.env[name];
  return v === undefined || v === "" ? fallback : v;
}

// ---------------------------------------------------------------------------------------------
// build
// ---------------------------------------------------------------------------------------------

function goBinary(): string {
  const r = spawnSync("go", ["version"], { encoding: "utf8" });
  if (r.status === 0) return "go";
  if (existsSync("/usr/local/go/bin/go")) return "/usr/local/go/bin/go";
  throw new StepError("build", "the go command was not found (need Go >= 1.25 on PATH or at /usr/local/go)");
}

function goEnv(): NodeJS.ProcessEnv {
  return { ...process.env, CGO_ENABLED: "0", GOFLAGS: "-buildvcs=false" };
}

interface GoModJson {
  Go?: string;
  Require?: { Path: string; Version: string }[];
  Replace?: { Old: { Path: string }; New: { Path: string; Version?: string } }[];
}

function runGo(go: string, args: string[], cwd: string, step: string, log: string): string {
  const r = spawnSync(go, args, { cwd, env: goEnv(), encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  writeFileSync(log, `$ go ${args.join(" ")}\n${r.stdout}${r.stderr}\n`, { flag: "a" });
  if (r.status !== 0) throw new StepError(step, `go ${args.join(" ")} failed in ${cwd}`, log);
  return r.stdout;
}

function modJson(go: string, dir: string, log: string): GoModJson {
  return JSON.parse(runGo(go, ["mod", "edit", "-json"], dir, "build: read go.mod", log)) as GoModJson;
}

function requireVersion(mod: GoModJson, path: string): string | undefined {
  return mod.Require?.find((r) => r.Path === path)?.Version;
}

interface ModuleDownload {
  GoMod?: string;
  Zip?: string;
  Dir?: string;
  Error?: string;
}

/** `go mod download -json` of one module; tolerates the "requires go >= X" refusal to extract. */
function download(go: string, mod: string, cwd: string, step: string, log: string): ModuleDownload {
  const r = spawnSync(go, ["mod", "download", "-json", mod], { cwd, env: goEnv(), encoding: "utf8" });
  writeFileSync(log, `$ go mod download -json ${mod}\n${r.stdout}${r.stderr}\n`, { flag: "a" });
  try {
    return JSON.parse(r.stdout) as ModuleDownload;
  } catch {
    throw new StepError(step, `go mod download ${mod} failed`, log);
  }
}

/** "1.26.9" → [1, 26, 9]. */
function goVersionParts(v: string): number[] {
  return v
    .replace(/^go/, "")
    .split(".")
    .map((x) => Number.parseInt(x, 10) || 0);
}

/**
 * Newer Karpenter patch releases raise their go.mod `go` line to the newest Go patch (security
 * fixes in the standard library, no language change). The machines' toolchain is pinned
 * (GOTOOLCHAIN=local, no toolchain downloads), so when Karpenter asks for a newer *patch* of the
 * same Go minor, the rig extracts the module zip under .rig/src and lowers that line to the local
 * toolchain. A newer Go *minor* is refused with a clear message.
 */
function karpenterSource(
  go: string,
  version: string,
  cwd: string,
  step: string,
  log: string,
): string | undefined {
  const dl = download(go, `sigs.k8s.io/karpenter@${version}`, cwd, step, log);
  if (dl.GoMod === undefined)
    throw new StepError(step, `cannot download sigs.k8s.io/karpenter@${version}`, log);
  const needs = /^go\s+(\S+)/m.exec(readFileSync(dl.GoMod, "utf8"))?.[1] ?? "0";
  const have = spawnSync(go, ["env", "GOVERSION"], { encoding: "utf8" }).stdout.trim().replace(/^go/, "");
  const [nMaj, nMin, nPatch] = goVersionParts(needs);
  const [hMaj, hMin, hPatch] = goVersionParts(have);
  if (nMaj === hMaj && nMin === hMin && (nPatch ?? 0) <= (hPatch ?? 0)) return undefined;
  if (nMaj !== hMaj || (nMin ?? 0) > (hMin ?? 0)) {
    throw new StepError(
      step,
      `sigs.k8s.io/karpenter@${version} needs Go ${needs}; this machine has Go ${have}`,
    );
  }
  if ((nMin ?? 0) < (hMin ?? 0)) return undefined;
  const dir = join(srcDir, `karpenter@${version}`);
  const goModPath = join(dir, "go.mod");
  if (!existsSync(goModPath)) {
    if (dl.Zip === undefined)
      throw new StepError(step, `no module zip for sigs.k8s.io/karpenter@${version}`, log);
    say(
      `${step}: Karpenter ${version} asks for Go ${needs}; building it with the local Go ${have} (same minor)`,
    );
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const tmp = join(srcDir, `.unzip-${version}`);
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(tmp, { recursive: true });
    const r = spawnSync("python3", ["-c", UNZIP_PY, dl.Zip, tmp], { encoding: "utf8" });
    if (r.status !== 0) throw new StepError(step, `extracting ${dl.Zip} failed: ${r.stderr}`);
    rmSync(dir, { recursive: true, force: true });
    renameSync(join(tmp, `sigs.k8s.io/karpenter@${version}`), dir);
    rmSync(tmp, { recursive: true, force: true });
    const text = readFileSync(goModPath, "utf8").replace(/^go\s+\S+$/m, `go ${have}`);
    writeFileSync(goModPath, text);
  }
  return dir;
}

// The module zip → a directory (Node has no unzip; python3 is on every Debian with apt).
const UNZIP_PY = "import sys,zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])";

/**
 * The wrapper module that builds `piece` at `version`: .rig/build/<module>@<version>/, seeded from
 * hack/rig/<module>/ (go.mod, go.sum, main.go) and synced to the version once.
 */
function moduleDir(go: string, piece: Piece, version: string, log: string): string {
  const dir = join(buildDir, `${piece.module}@${version}`);
  const seed = join(rigSrcDir, piece.module);
  const done = join(dir, ".synced");
  if (existsSync(done) && readFileSync(done, "utf8") === version) return dir;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const f of readdirSync(seed)) cpSync(join(seed, f), join(dir, f));
  const mod = modJson(go, dir, log);
  const step = `build: sync ${piece.module}@${version}`;
  if (piece.module === "kube") {
    const staging = `v0.${version.replace(/^v1\./, "")}`;
    const replacesOk = (mod.Replace ?? []).every((r) => r.New.Version === staging);
    if (requireVersion(mod, "k8s.io/kubernetes") !== version || !replacesOk) {
      say(`${step} (staging modules ${staging})`);
      // The staging module list and the godebug default come from k8s.io/kubernetes' own go.mod.
      const info = download(go, `k8s.io/kubernetes@${version}`, dir, step, log);
      if (info.GoMod === undefined)
        throw new StepError(step, `cannot download k8s.io/kubernetes@${version}`, log);
      const upstream = readFileSync(info.GoMod, "utf8");
      const stagingMods = [...upstream.matchAll(/^\s*(\S+) => \.\/staging\//gm)].map((m) => m[1] ?? "");
      const godebug = /^godebug\s+default=(\S+)/m.exec(upstream)?.[1];
      // Only k8s.io/kubernetes' own requirements: the seed's belong to another version (see below).
      rmSync(join(dir, "go.sum"), { force: true });
      const edits = [
        ...(mod.Require ?? []).map((r) => `-droprequire=${r.Path}`),
        ...(mod.Replace ?? []).map((r) => `-dropreplace=${r.Old.Path}`),
        ...stagingMods.map((m) => `-replace=${m}=${m}@${staging}`),
        `-require=k8s.io/kubernetes@${version}`,
        ...(godebug === undefined ? [] : [`-godebug=default=${godebug}`]),
      ];
      runGo(go, ["mod", "edit", ...edits], dir, step, log);
      runGo(go, ["mod", "tidy"], dir, step, log);
    }
  } else if (requireVersion(mod, piece.modulePath) !== version) {
    // Start from the seed's module and tool lines only: its other requirements belong to the seed's
    // version, and minimal version selection would keep them where they are newer (an older
    // Karpenter then fails to compile against a newer operatorpkg).
    say(step);
    runGo(go, ["mod", "edit", ...(mod.Require ?? []).map((r) => `-droprequire=${r.Path}`)], dir, step, log);
    rmSync(join(dir, "go.sum"), { force: true });
    const local = piece.module === "karpenter" ? karpenterSource(go, version, dir, step, log) : undefined;
    if (local !== undefined) {
      runGo(
        go,
        ["mod", "edit", `-replace=${piece.modulePath}=${local}`, `-require=${piece.modulePath}@${version}`],
        dir,
        step,
        log,
      );
      runGo(go, ["mod", "tidy"], dir, step, log);
    } else {
      runGo(go, ["get", `${piece.modulePath}@${version}`], dir, step, log);
      runGo(go, ["mod", "tidy"], dir, step, log);
    }
  }
  writeFileSync(done, version);
  return dir;
}

interface Piece {
  module: string; // hack/rig/<module>
  versionKey: string;
  modulePath: string; // the upstream module pinned by versionKey
  version: (pair: RigPair) => string;
  /** realNode: built only for the opt-in real node (--real-node); modMod: go.sum filled in by the build. */
  binaries: { out: string; pkg: string; realNode?: boolean; modMod?: boolean }[];
  ldflags: (version: string) => string;
}

const pieces: Piece[] = [
  {
    module: "etcd",
    versionKey: "ETCD_VERSION",
    modulePath: "go.etcd.io/etcd/server/v3",
    version: (p) => p.etcd,
    binaries: [{ out: "etcd", pkg: "." }],
    ldflags: () => "-s -w",
  },
  {
    module: "kube",
    versionKey: "KUBE_VERSION",
    modulePath: "k8s.io/kubernetes",
    version: (p) => p.kubernetes,
    binaries: [
      ...["kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"].map((b) => ({
        out: b,
        pkg: `k8s.io/kubernetes/cmd/${b}`,
      })),
      // The real node's kubelet, from the same tree; a build dir synced before it lacks its go.sum lines.
      { out: "kubelet", pkg: "k8s.io/kubernetes/cmd/kubelet", realNode: true, modMod: true },
    ],
    ldflags: (v) => {
      const [major, minor] = v.replace(/^v/, "").split(".");
      return ["k8s.io/component-base/version", "k8s.io/client-go/pkg/version"]
        .map((p) => `-X ${p}.gitVersion=${v} -X ${p}.gitMajor=${major ?? ""} -X ${p}.gitMinor=${minor ?? ""}`)
        .join(" ")
        .concat(" -s -w");
    },
  },
  {
    module: "kwok",
    versionKey: "KWOK_VERSION",
    modulePath: "sigs.k8s.io/kwok",
    version: (p) => p.kwok,
    binaries: [{ out: "kwok", pkg: "sigs.k8s.io/kwok/cmd/kwok" }],
    ldflags: () => "-s -w",
  },
  {
    module: "karpenter",
    versionKey: "KARPENTER_VERSION",
    modulePath: "sigs.k8s.io/karpenter",
    version: (p) => p.karpenter,
    // Also a binary named "kwok" upstream; renamed so it can share .rig/bin.
    binaries: [{ out: "karpenter-kwok", pkg: "sigs.k8s.io/karpenter/kwok" }],
    ldflags: () => "-s -w",
  },
];

function memUsedMiB(): number {
  const info = readFileSync("/proc/meminfo", "utf8");
  const field = (k: string): number => Number(new RegExp(`^${k}:\\s+(\\d+)`, "m").exec(info)?.[1] ?? "0");
  return Math.round((field("MemTotal") - field("MemAvailable")) / 1024);
}

function runBuild(
  go: string,
  args: string[],
  cwd: string,
  log: string,
): Promise<{ code: number; maxRssMiB?: number }> {
  return new Promise((ok) => {
    const out = createWriteStream(log, { flags: "a" });
    out.write(`$ go ${args.join(" ")}\n`);
    const useTime = existsSync("/usr/bin/time");
    const child = useTime
      ? spawn("/usr/bin/time", ["-v", go, ...args], { cwd, env: goEnv(), stdio: ["ignore", "pipe", "pipe"] })
      : spawn(go, args, { cwd, env: goEnv(), stdio: ["ignore", "pipe", "pipe"] });
    let errText = "";
    child.stdout.pipe(out, { end: false });
    child.stderr.on("data", (d: Buffer) => {
      errText += d.toString();
      out.write(d);
    });
    child.on("close", (code) => {
      out.end();
      const rss = /Maximum resident set size \(kbytes\): (\d+)/.exec(errText)?.[1];
      ok({ code: code ?? 1, ...(rss === undefined ? {} : { maxRssMiB: Math.round(Number(rss) / 1024) }) });
    });
  });
}

/** Where a piece's binary at a version lives: .rig/cache/<module>@<version>/<out>. */
function cachedBinary(piece: Piece, version: string, out: string): string {
  return join(cacheDir, `${piece.module}@${version}`, out);
}

/** Replace `dst` with a hard link to `src` (a running process keeps its old inode). */
function linkInto(src: string, dst: string): void {
  rmSync(dst, { force: true });
  try {
    linkSync(src, dst);
  } catch {
    cpSync(src, dst);
  }
}

/** Build what the pair lacks into .rig/cache (side by side per version); returns the pair. */
export async function build(pair: RigPair = selectPair(readVersions()), realNode = false): Promise<RigPair> {
  const go = goBinary();
  mkdirSync(binDir, { recursive: true });
  mkdirSync(logsDir, { recursive: true });
  mkdirSync(buildDir, { recursive: true });
  const goVersion = spawnSync(go, ["env", "GOVERSION"], { encoding: "utf8" }).stdout.trim();
  const full = String(Math.min(2, availableParallelism()));
  // CI builds beside its other phases at -p 1, then with every core once this file exists (.ci/run
  // creates it when the phases that share the machine are done).
  const wholeMachineAfter = process.env["WAVE_RIG_BUILD_FULL_AFTER"];
  const parallelNow = (): string =>
    wholeMachineAfter !== undefined && existsSync(wholeMachineAfter)
      ? full
      : envStr("WAVE_RIG_BUILD_P", full);
  const started = Date.now();
  const baseline = memUsedMiB();
  let peakUsed = baseline;
  const sampler = setInterval(() => {
    peakUsed = Math.max(peakUsed, memUsedMiB());
  }, 1000);
  let built = 0;
  const summary: string[] = [];
  try {
    for (const piece of pieces) {
      const version = piece.version(pair);
      const ldflags = piece.ldflags(version);
      const stampOf = (out: string): string =>
        `${piece.versionKey}=${version} ${goVersion} CGO_ENABLED=0 -trimpath -ldflags=${ldflags} ${out}\n`;
      const stampOk = (bin: string, out: string): boolean =>
        existsSync(bin) &&
        existsSync(`${bin}.stamp`) &&
        readFileSync(`${bin}.stamp`, "utf8") === stampOf(out);
      const todo = piece.binaries.filter((b) => {
        if (b.realNode === true && !realNode) return false;
        const cached = cachedBinary(piece, version, b.out);
        if (stampOk(cached, b.out)) return false;
        // A binary built before the per-version cache (or copied from another checkout's .rig/bin)
        // with the right stamp is adopted instead of rebuilt.
        const legacy = join(binDir, b.out);
        if (stampOk(legacy, b.out)) {
          mkdirSync(dirname(cached), { recursive: true });
          linkInto(legacy, cached);
          writeFileSync(`${cached}.stamp`, stampOf(b.out));
          return false;
        }
        return true;
      });
      if (todo.length === 0) continue;
      const syncLog = logFile(`build-${piece.module}@${version}-gomod`);
      writeFileSync(syncLog, "");
      const dir = moduleDir(go, piece, version, syncLog);
      for (const b of todo) {
        const bin = cachedBinary(piece, version, b.out);
        mkdirSync(dirname(bin), { recursive: true });
        const log = logFile(`build-${b.out}@${version}`);
        writeFileSync(
          log,
          `# ${new Date().toISOString()} building ${b.out} (${piece.versionKey}=${version})\n`,
        );
        const parallel = parallelNow();
        say(`building ${b.out} (${piece.versionKey}=${version}, -p ${parallel}); log: ${log}`);
        const t0 = Date.now();
        rmSync(`${bin}.stamp`, { force: true });
        const mod = b.modMod === true ? ["-mod=mod"] : [];
        const args = ["build", "-p", parallel, ...mod, "-trimpath", "-ldflags", ldflags, "-o", bin, b.pkg];
        const r = await runBuild(go, args, dir, log);
        if (r.code !== 0) throw new StepError(`build ${b.out}`, `go build failed (exit ${r.code})`, log);
        writeFileSync(`${bin}.stamp`, stampOf(b.out));
        const secs = ((Date.now() - t0) / 1000).toFixed(0);
        const line = `${b.out}@${version}: ${secs}s, max RSS of one process ${r.maxRssMiB ?? "?"} MiB`;
        summary.push(line);
        say(`built ${line}`);
        built++;
      }
    }
  } finally {
    clearInterval(sampler);
  }
  if (built > 0) {
    const total = `total ${((Date.now() - started) / 1000).toFixed(0)}s for ${built} binaries; peak system memory in use ${peakUsed} MiB (baseline ${baseline} MiB)`;
    say(total);
    writeFileSync(
      logFile("build-summary"),
      `# ${new Date().toISOString()} Karpenter ${pair.karpenter} / Kubernetes ${pair.kubernetes}\n${summary.join("\n")}\n${total}\n`,
      { flag: "a" },
    );
  } else {
    say(`binaries up to date for Karpenter ${pair.karpenter} / Kubernetes ${pair.kubernetes} (.rig/cache)`);
  }
  return pair;
}

/** Point .rig/bin at the pair's cached binaries (hard links, with their stamps). */
function activate(pair: RigPair): void {
  mkdirSync(binDir, { recursive: true });
  for (const piece of pieces) {
    const version = piece.version(pair);
    for (const b of piece.binaries) {
      const src = cachedBinary(piece, version, b.out);
      const dst = join(binDir, b.out);
      // The real node's binaries exist only once a --real-node build made them.
      if (b.realNode === true && !existsSync(`${src}.stamp`)) continue;
      if (
        !existsSync(`${dst}.stamp`) ||
        readFileSync(`${dst}.stamp`, "utf8") !== readFileSync(`${src}.stamp`, "utf8")
      ) {
        linkInto(src, dst);
        linkInto(`${src}.stamp`, `${dst}.stamp`);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// pki + kubeconfig
// ---------------------------------------------------------------------------------------------

function openssl(args: string[], log: string): void {
  const r = spawnSync("openssl", args, { cwd: pkiDir, encoding: "utf8" });
  writeFileSync(log, `$ openssl ${args.join(" ")}\n${r.stdout}${r.stderr}\n`, { flag: "a" });
  if (r.error !== undefined || r.status !== 0) {
    throw new StepError("pki", `openssl ${args[0] ?? ""} failed (is the openssl CLI installed?)`, log);
  }
}

function ensurePki(): void {
  const files = [
    "ca.crt",
    "ca.key",
    "apiserver.crt",
    "apiserver.key",
    "admin.crt",
    "admin.key",
    "sa.key",
    "sa.pub",
  ];
  if (files.every((f) => existsSync(join(pkiDir, f)))) return;
  say("generating certificates in .rig/pki");
  rmSync(pkiDir, { recursive: true, force: true });
  mkdirSync(pkiDir, { recursive: true });
  const log = logFile("pki");
  writeFileSync(log, "");
  const days = "3650";
  openssl(
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      "ca.key",
      "-out",
      "ca.crt",
      "-days",
      days,
      "-subj",
      "/CN=wave-rig-ca",
    ],
    log,
  );
  const leaf = (name: string, subj: string, ext: string): void => {
    writeFileSync(join(pkiDir, `${name}.ext`), ext);
    openssl(
      [
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        `${name}.key`,
        "-out",
        `${name}.csr`,
        "-subj",
        subj,
      ],
      log,
    );
    openssl(
      [
        "x509",
        "-req",
        "-in",
        `${name}.csr`,
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        `${name}.crt`,
        "-days",
        days,
        "-extfile",
        `${name}.ext`,
      ],
      log,
    );
  };
  leaf(
    "apiserver",
    "/CN=kube-apiserver",
    "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n" +
      "subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\n",
  );
  leaf(
    "admin",
    "/O=system:masters/CN=wave-rig-admin",
    "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n",
  );
  openssl(["genrsa", "-out", "sa.key", "2048"], log);
  openssl(["rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub"], log);
}

/** The rig admin's kubeconfig for an apiserver on `apiPort` (exported for e2e tests). */
export function rigKubeconfig(apiPort: number): object {
  const b64 = (f: string): string => readFileSync(join(pkiDir, f)).toString("base64");
  return {
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      {
        name: "wave-rig",
        cluster: { server: `https://127.0.0.1:${apiPort}`, "certificate-authority-data": b64("ca.crt") },
      },
    ],
    users: [
      {
        name: "wave-rig-admin",
        user: { "client-certificate-data": b64("admin.crt"), "client-key-data": b64("admin.key") },
      },
    ],
    contexts: [{ name: "wave-rig", context: { cluster: "wave-rig", user: "wave-rig-admin" } }],
    "current-context": "wave-rig",
  };
}

function writeKubeconfig(apiPort: number): void {
  // JSON is valid YAML; every Kubernetes client reads it.
  writeFileSync(kubeconfigPath, JSON.stringify(rigKubeconfig(apiPort), null, 2) + "\n", { mode: 0o600 });
}

// ---------------------------------------------------------------------------------------------
// processes
// ---------------------------------------------------------------------------------------------

function startProcess(name: ComponentName, args: string[], env: NodeJS.ProcessEnv = {}): number {
  const bin = join(binDir, componentBinary[name]);
  const log = logFile(name);
  const out = createWriteStream(log, { flags: "a" });
  out.write(`\n# ${new Date().toISOString()} ${bin} ${args.join(" ")}\n`);
  out.end();
  // Open the log as a plain fd so the child keeps writing after this script exits.
  const fd = openSync(log, "a");
  const child = spawn(bin, args, {
    cwd: rigDir,
    env: { ...process.env, ...env },
    detached: true,
    stdio: ["ignore", fd, fd],
  });
  child.unref();
  if (child.pid === undefined) throw new StepError(`start ${name}`, "spawn failed", log);
  writeFileSync(pidFile(name), `${child.pid}\n`);
  return child.pid;
}

function probe(url: string): Promise<boolean> {
  return new Promise((ok) => {
    const getter = url.startsWith("https:") ? httpsGet : httpGet;
    const req = getter(url, { rejectUnauthorized: false, timeout: 3000 }, (res) => {
      res.resume();
      ok(res.statusCode === 200);
    });
    req.on("error", () => ok(false));
    req.on("timeout", () => {
      req.destroy();
      ok(false);
    });
  });
}

async function waitFor(
  name: ComponentName,
  what: string,
  check: () => Promise<boolean>,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (runningPid(name) === undefined) {
      throw new StepError(`start ${name}`, `${name} exited while waiting for ${what}`, logFile(name));
    }
    if (await check()) return;
    if (Date.now() > deadline) {
      throw new StepError(
        `start ${name}`,
        `timed out after ${timeoutMs / 1000}s waiting for ${what}`,
        logFile(name),
      );
    }
    await sleep(500);
  }
}

function crdFiles(pair: RigPair): string[] {
  const v = pair.karpenter;
  const patched = join(srcDir, `karpenter@${v}`);
  const go = goBinary();
  const gomodcache = spawnSync(go, ["env", "GOMODCACHE"], { encoding: "utf8" }).stdout.trim();
  let root = existsSync(join(patched, "go.mod")) ? patched : join(gomodcache, `sigs.k8s.io/karpenter@${v}`);
  if (!existsSync(root)) {
    // Binaries adopted from elsewhere: the module source is not here yet. Extract it like a
    // build would (under .rig/src when its go line is newer than the local Go).
    const log = logFile(`crds-karpenter@${v}`);
    writeFileSync(log, "");
    mkdirSync(rigDir, { recursive: true });
    root =
      karpenterSource(go, v, rigDir, "apply CRDs", log) ??
      download(go, `sigs.k8s.io/karpenter@${v}`, rigDir, "apply CRDs", log).Dir ??
      root;
  }
  const crdDir = join(root, "pkg/apis/crds");
  // Every CRD the release ships (NodeOverlay from v1.8, CapacityBuffer from v1.15, ...) plus the
  // KWOKNodeClass (the chart copy is a symlink missing from module zips).
  const shipped = existsSync(crdDir)
    ? readdirSync(crdDir)
        .filter((f) => f.endsWith(".yaml"))
        .sort()
        .map((f) => join(crdDir, f))
    : [];
  return [...shipped, join(root, "kwok/apis/crds/karpenter.kwok.sh_kwoknodeclasses.yaml")];
}

/** The default KWOKNodeClass and NodePool the rig provides (re-applied on every `up`). */
export function defaultObjects(): object[] {
  return [
    {
      apiVersion: "karpenter.kwok.sh/v1alpha1",
      kind: "KWOKNodeClass",
      metadata: { name: "default" },
      spec: { nodeRegistrationDelay: envStr("WAVE_RIG_NODE_REGISTRATION_DELAY", "1s") },
    },
    {
      apiVersion: "karpenter.sh/v1",
      kind: "NodePool",
      metadata: { name: "default" },
      spec: {
        template: {
          spec: {
            nodeClassRef: { group: "karpenter.kwok.sh", kind: "KWOKNodeClass", name: "default" },
            requirements: [
              { key: "kubernetes.io/os", operator: "In", values: ["linux"] },
              { key: "karpenter.sh/capacity-type", operator: "In", values: ["spot", "on-demand"] },
            ],
          },
        },
        disruption: {
          consolidationPolicy: "WhenEmptyOrUnderutilized",
          consolidateAfter: envStr("WAVE_RIG_CONSOLIDATE_AFTER", "10s"),
          budgets: [{ nodes: "100%" }],
        },
        limits: { cpu: "1000", memory: "4000Gi" },
      },
    },
  ];
}

async function applyDefaults(): Promise<void> {
  const list = { apiVersion: "v1", kind: "List", items: defaultObjects() };
  try {
    await kubectl(["apply", "-f", "-"], JSON.stringify(list));
  } catch (e) {
    throw new StepError("apply KWOKNodeClass/NodePool default", (e as Error).message);
  }
}

/**
 * kube-apiserver's flags on the rig. Exported for e2e tests that run a second apiserver on the same
 * etcd (to kill and restart it without disturbing the shared rig).
 */
export function apiserverArgs(o: { etcdUrl: string; port: number; certDir: string }): string[] {
  const pki = (f: string): string => join(pkiDir, f);
  return [
    `--etcd-servers=${o.etcdUrl}`,
    "--bind-address=127.0.0.1",
    "--advertise-address=127.0.0.1",
    `--secure-port=${String(o.port)}`,
    `--tls-cert-file=${pki("apiserver.crt")}`,
    `--tls-private-key-file=${pki("apiserver.key")}`,
    `--client-ca-file=${pki("ca.crt")}`,
    `--service-account-key-file=${pki("sa.pub")}`,
    `--service-account-signing-key-file=${pki("sa.key")}`,
    "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
    "--service-cluster-ip-range=10.96.0.0/16",
    "--authorization-mode=Node,RBAC",
    // The real node's name does not resolve; its InternalIP (the bridge address) does.
    "--kubelet-preferred-address-types=InternalIP,Hostname",
    "--allow-privileged=true",
    "--profiling=false",
    `--cert-dir=${o.certDir}`,
  ];
}

async function startAll(pair: RigPair, gates: string): Promise<RigState> {
  const [etcdPort, etcdPeer, apiPort, kcmPort, schedPort, kwokPort, karpMetrics, karpHealth] =
    await freePorts(8);
  const ports = {
    etcdPort,
    etcdPeer,
    apiPort,
    kcmPort,
    schedPort,
    kwokPort,
    karpMetrics,
    karpHealth,
  } as Record<string, number>;
  const p = (k: string): number => ports[k] ?? 0;
  rmSync(dataDir, { recursive: true, force: true });
  mkdirSync(dataDir, { recursive: true });
  writeKubeconfig(p("apiPort"));
  const pki = (f: string): string => join(pkiDir, f);
  const etcdUrl = `http://127.0.0.1:${p("etcdPort")}`;
  const peerUrl = `http://127.0.0.1:${p("etcdPeer")}`;

  say(`starting etcd on ${etcdUrl}`);
  startProcess("etcd", [
    "--name=rig",
    `--data-dir=${join(dataDir, "etcd")}`,
    `--listen-client-urls=${etcdUrl}`,
    `--advertise-client-urls=${etcdUrl}`,
    `--listen-peer-urls=${peerUrl}`,
    `--initial-advertise-peer-urls=${peerUrl}`,
    `--initial-cluster=rig=${peerUrl}`,
    "--unsafe-no-fsync=true",
    "--log-level=warn",
  ]);
  await waitFor("etcd", `${etcdUrl}/health`, () => probe(`${etcdUrl}/health`), 30_000);

  const apiserver = `https://127.0.0.1:${p("apiPort")}`;
  say(`starting kube-apiserver on ${apiserver}`);
  startProcess(
    "kube-apiserver",
    apiserverArgs({ etcdUrl, port: p("apiPort"), certDir: join(dataDir, "apiserver-certs") }),
  );
  await waitFor("kube-apiserver", `${apiserver}/readyz`, () => apiserverReady(), 120_000);

  const kc = kubeconfigPath;
  say("starting kube-controller-manager and kube-scheduler");
  startProcess("kube-controller-manager", [
    `--kubeconfig=${kc}`,
    `--authentication-kubeconfig=${kc}`,
    `--authorization-kubeconfig=${kc}`,
    "--bind-address=127.0.0.1",
    `--secure-port=${p("kcmPort")}`,
    `--cert-dir=${join(dataDir, "kcm-certs")}`,
    "--leader-elect=false",
    "--controllers=*",
    `--service-account-private-key-file=${pki("sa.key")}`,
    `--root-ca-file=${pki("ca.crt")}`,
    `--cluster-signing-cert-file=${pki("ca.crt")}`,
    `--cluster-signing-key-file=${pki("ca.key")}`,
    "--service-cluster-ip-range=10.96.0.0/16",
    "--profiling=false",
  ]);
  startProcess("kube-scheduler", [
    `--kubeconfig=${kc}`,
    `--authentication-kubeconfig=${kc}`,
    `--authorization-kubeconfig=${kc}`,
    "--bind-address=127.0.0.1",
    `--secure-port=${p("schedPort")}`,
    "--leader-elect=false",
    "--profiling=false",
  ]);
  await waitFor(
    "kube-controller-manager",
    "/healthz",
    () => probe(`https://127.0.0.1:${p("kcmPort")}/healthz`),
    60_000,
  );
  await waitFor(
    "kube-scheduler",
    "/healthz",
    () => probe(`https://127.0.0.1:${p("schedPort")}/healthz`),
    60_000,
  );

  say("applying Karpenter CRDs");
  const crds = crdFiles(pair);
  for (const f of crds) {
    try {
      await kubectl(["apply", "--server-side", "--force-conflicts", "-f", f]);
    } catch (e) {
      throw new StepError("apply CRDs", `${f}: ${(e as Error).message}`);
    }
  }
  // Wave's own CRDs (SpotPolicy, WarmupPolicy), as its chart installs them: core keeps policies
  // as these resources, so every e2e that sets a policy needs them (issue 31).
  try {
    await kubectl([
      "apply",
      "--server-side",
      "--force-conflicts",
      "-f",
      join(repoRoot, "deploy/helm/wave/crds"),
    ]);
  } catch (e) {
    throw new StepError("apply Wave CRDs", (e as Error).message);
  }
  await kubectl(["wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"]);
  await applyDefaults();

  say("starting KWOK controller and Karpenter (KWOK provider)");
  startProcess("kwok-controller", [
    `--kubeconfig=${kc}`,
    "--manage-all-nodes=false",
    "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
    "--node-lease-duration-seconds=40",
    "--cidr=10.0.0.0/16",
    "--node-ip=10.0.0.1",
    `--server-address=127.0.0.1:${p("kwokPort")}`,
    `--node-port=${p("kwokPort")}`,
  ]);
  // Karpenter panics on unknown flags: configure it by environment only.
  startProcess("karpenter", [], {
    KUBECONFIG: kc,
    DISABLE_LEADER_ELECTION: "true",
    METRICS_PORT: String(p("karpMetrics")),
    HEALTH_PROBE_PORT: String(p("karpHealth")),
    BATCH_IDLE_DURATION: envStr("WAVE_RIG_BATCH_IDLE_DURATION", "1s"),
    BATCH_MAX_DURATION: envStr("WAVE_RIG_BATCH_MAX_DURATION", "10s"),
    LOG_LEVEL: envStr("WAVE_RIG_KARPENTER_LOG_LEVEL", "info"),
    // The release's alpha features Wave reads (versions.env GATES_): as a team that uses them runs it.
    ...(gates ? { FEATURE_GATES: gates } : {}),
  });
  await waitFor(
    "kwok-controller",
    "/healthz",
    () => probe(`http://127.0.0.1:${p("kwokPort")}/healthz`),
    60_000,
  );
  await waitFor("karpenter", "/readyz", () => probe(`http://127.0.0.1:${p("karpHealth")}/readyz`), 90_000);

  const state: RigState = {
    startedAt: new Date().toISOString(),
    pair,
    ports,
    kubeconfig: kc,
    apiserver,
    gates,
  };
  writeFileSync(statePath, JSON.stringify(state, null, 2) + "\n");
  return state;
}

// ---------------------------------------------------------------------------------------------
// commands
// ---------------------------------------------------------------------------------------------

const samePair = (a: RigPair | undefined, b: RigPair): boolean =>
  a !== undefined &&
  a.karpenter === b.karpenter &&
  a.kubernetes === b.kubernetes &&
  a.etcd === b.etcd &&
  a.kwok === b.kwok;

/**
 * Bring the rig up at a version pair (default: versions.env's DEFAULT_KARPENTER); returns true if
 * this call started it, false if a healthy rig at the same pair was reused.
 */
export async function up(requested?: string, argv: string[] = process.argv.slice(3)): Promise<boolean> {
  const t0 = Date.now();
  mkdirSync(runDir, { recursive: true });
  mkdirSync(logsDir, { recursive: true });
  let pair: RigPair;
  try {
    pair = selectPair(readVersions(), requested);
  } catch (e) {
    throw new StepError("select versions", (e as Error).message);
  }
  const realNode = realNodeRequested(argv);
  await build(pair, realNode);
  const gates = requestedGates(pair, argv);
  const running = readState();
  if ((await rigHealthy()) && samePair(running?.pair, pair) && (running?.gates ?? "") === gates) {
    say(`reusing the running rig (Karpenter ${pair.karpenter}, Kubernetes ${pair.kubernetes})`);
    await applyDefaults();
    if (realNode) {
      activate(pair);
      await startRealNode(running?.apiserver ?? "");
    }
    say(`ready in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
    process.stdout.write(`export KUBECONFIG=${kubeconfigPath}\n`);
    return false;
  }
  await down(true);
  activate(pair);
  ensurePki();
  say(
    `starting Karpenter ${pair.karpenter} on Kubernetes ${pair.kubernetes} (etcd ${pair.etcd}, KWOK ${pair.kwok}); ` +
      `feature gates: ${gates || "the release's defaults"}`,
  );
  const state = await startAll(pair, gates);
  if (realNode) await startRealNode(state.apiserver);
  say(`rig up in ${((Date.now() - t0) / 1000).toFixed(1)}s; logs in ${logsDir}`);
  process.stdout.write(`export KUBECONFIG=${kubeconfigPath}\n`);
  return true;
}

export async function down(quiet = false): Promise<void> {
  // First, while the apiserver still answers: the kubelet, its pods and containerd.
  await stopRealNode(quiet);
  for (const name of [...componentNames].reverse()) {
    const pid = readPid(name);
    if (pid === undefined) continue;
    if (!pidRunsBinary(pid, componentBinary[name])) {
      if (!quiet) say(`${name}: stale pid file (pid ${pid} is not ${componentBinary[name]}), removed`);
      rmSync(pidFile(name), { force: true });
      continue;
    }
    say(`stopping ${name} (pid ${pid})`);
    try {
      process.kill(pid, "SIGTERM");
    } catch {
      /* already gone */
    }
    const deadline = Date.now() + 15_000;
    while (pidRunsBinary(pid, componentBinary[name]) && Date.now() < deadline) await sleep(200);
    if (pidRunsBinary(pid, componentBinary[name])) {
      say(`${name} did not stop in 15s, sending SIGKILL`);
      process.kill(pid, "SIGKILL");
      await sleep(500);
    }
    rmSync(pidFile(name), { force: true });
  }
  rmSync(statePath, { force: true });
  if (!quiet) say("rig stopped");
}

export async function status(): Promise<boolean> {
  const state = readState();
  let all = true;
  for (const name of componentNames) {
    const pid = readPid(name);
    const running = runningPid(name);
    if (running !== undefined) process.stdout.write(`${name.padEnd(24)} running (pid ${running})\n`);
    else {
      all = false;
      process.stdout.write(
        `${name.padEnd(24)} ${pid === undefined ? "stopped" : `stale pid file (pid ${pid} is not the rig's ${componentBinary[name]})`}\n`,
      );
    }
  }
  const ready = await apiserverReady();
  process.stdout.write(`${"apiserver /readyz".padEnd(24)} ${ready ? "ok" : "not ready"}\n`);
  if (state !== undefined && all && ready) {
    if (state.pair !== undefined) {
      process.stdout.write(
        `versions                 Karpenter ${state.pair.karpenter}, Kubernetes ${state.pair.kubernetes}\n`,
      );
    }
    process.stdout.write(`apiserver ${state.apiserver}\nexport KUBECONFIG=${kubeconfigPath}\n`);
    const nodes = await kubectl(["get", "nodeclaims,nodes", "-o", "name"]).catch(() => "");
    const n = nodes.split("\n").filter((l) => l.startsWith("nodeclaim")).length;
    process.stdout.write(`nodeclaims: ${n}\n`);
    const real = readRealNode();
    if (real !== undefined) {
      const jp = '{.status.conditions[?(@.type=="Ready")].status}';
      const ready = await kubectl(["get", "node", real.layout.name, "-o", `jsonpath=${jp}`]).catch(() => "");
      process.stdout.write(`real node: ${real.layout.name} Ready=${ready || "unknown"}\n`);
    }
  }
  return all && ready;
}

function report(e: unknown): never {
  if (e instanceof StepError) {
    process.stderr.write(`\n[rig] FAILED at step "${e.step}": ${e.message}\n`);
    if (e.log !== undefined) {
      process.stderr.write(
        `[rig] log: ${e.log}\n----- last 30 lines -----\n${tailFile(e.log, 30)}\n-------------------------\n`,
      );
    }
  } else {
    process.stderr.write(`\n[rig] FAILED: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  }
  process.exit(1);
}

export { StepError, report };

async function main(): Promise<void> {
  const cmd = process.argv[2];
  switch (cmd) {
    case "build":
      await build(
        selectPair(readVersions(), requestedKarpenter(process.argv.slice(3))),
        realNodeRequested(process.argv.slice(3)),
      );
      return;
    case "up":
      await up(requestedKarpenter(process.argv.slice(3)));
      return;
    case "down":
      await down();
      return;
    case "status":
      await status();
      return;
    default:
      process.stderr.write(
        "usage: node hack/rig/cluster.ts build|up|down|status [--karpenter vX.Y[.Z]] [--real-node]\n",
      );
      process.exit(2);
  }
}

if (import.meta.main) {
  main().catch(report);
}
