// A Kubernetes container spec, as the chart renders it, run by podman the way a kubelet would run
// it: the image's entrypoint with the container's args, its environment, its volumes mounted at
// its paths (read-only where the spec says so), its security context (user, read-only root,
// dropped capabilities, no privilege escalation), and the pod's ServiceAccount token + CA at
// /var/run/secrets/kubernetes.io/serviceaccount with KUBERNETES_SERVICE_HOST/PORT, so the
// process takes its in-cluster client path. Host networking: the machines this runs on refuse
// podman's own networks' defaults (see hack/image/build.sh for the runtime and ulimit flags).
import { execFile } from "node:child_process";
import { chownSync, existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** podman with the runtime and limits that work on these machines (crun and the default ulimits fail). */
export const PODMAN_FLAGS = ["--runtime", "runc"] as const;
export const RUN_FLAGS = [
  "--network",
  "host",
  "--ulimit",
  "nofile=1024:1024",
  "--ulimit",
  "nproc=1024:1024",
] as const;

export async function podman(args: readonly string[], timeoutMs = 120_000): Promise<string> {
  const { stdout } = await run("podman", [...PODMAN_FLAGS, ...args], {
    timeout: timeoutMs,
    maxBuffer: 16 * 1024 * 1024,
  });
  return stdout;
}

/** Why containers cannot run here (podman or the image missing), or false. */
export async function podmanSkipReason(image: string): Promise<string | false> {
  try {
    await run("podman", ["--version"]);
  } catch {
    return "podman not installed (apt-get install podman buildah runc): the image e2e needs it";
  }
  try {
    await run("podman", ["image", "exists", image]);
  } catch {
    return `image ${image} not built: run npm run image:build (or set WAVE_E2E_IMAGE)`;
  }
  return false;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
export const field = (o: unknown, ...path: string[]): unknown => {
  let cur = o;
  for (const k of path) cur = isObj(cur) ? cur[k] : undefined;
  return cur;
};
export const objs = (v: unknown): Obj[] => (Array.isArray(v) ? v.filter(isObj) : []);
export const strings = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];

/** Where a pod volume's content comes from on this host. */
export interface VolumeSources {
  /** configMap name → its rendered data (file name → content). */
  configMaps: Record<string, Record<string, string>>;
  /** secret name → a host directory holding its files (e.g. TLS laid out like cert-manager's). */
  secrets: Record<string, string>;
  /** persistentVolumeClaim name → a host directory. */
  claims: Record<string, string>;
}

export interface ContainerRun {
  name: string;
  image: string;
  /** The pod spec the chart renders (spec.template.spec). */
  podSpec: Obj;
  /** The resolved environment (see chartEnv in the test). */
  env: Record<string, string>;
  volumes: VolumeSources;
  /** Directory with token, ca.crt and namespace: the pod's ServiceAccount mount. */
  serviceAccountDir: string;
  apiServer: { host: string; port: string };
  /** Extra /etc/hosts entries (Service names → 127.0.0.1 on host networking). */
  hosts: Record<string, string>;
  /** Scratch directory for files the run needs (env file, config files). */
  work: string;
  uid: number;
}

/** Gives `uid` a directory tree, the way fsGroup and the kubelet's Secret mounts would. */
export function ownTree(dir: string, uid: number): void {
  chownSync(dir, uid, uid);
  if (!statSync(dir).isDirectory()) return;
  for (const e of readdirSync(dir)) ownTree(join(dir, e), uid);
}

/** `podman run` arguments for the pod's first container; throws on a volume it cannot provide. */
export function runArgs(r: ContainerRun): string[] {
  const [c] = objs(field(r.podSpec, "containers"));
  if (!c) throw new Error(`${r.name}: the pod spec has no container`);
  const podSec = field(r.podSpec, "securityContext");
  const sec = field(c, "securityContext");
  const user = field(sec, "runAsUser") ?? field(podSec, "runAsUser");
  const group = field(sec, "runAsGroup") ?? field(podSec, "runAsGroup");
  const args: string[] = ["run", "-d", "--name", r.name, ...RUN_FLAGS];
  if (typeof user === "number") args.push("--user", `${user}:${typeof group === "number" ? group : user}`);
  // podman's --read-only would add its own tmpfs mounts (/tmp, /run, /var/tmp): only the pod's
  // volumes are writable here, as in Kubernetes.
  if (field(sec, "readOnlyRootFilesystem") === true) args.push("--read-only", "--read-only-tmpfs=false");
  for (const cap of strings(field(sec, "capabilities", "drop"))) args.push("--cap-drop", cap);
  if (field(sec, "allowPrivilegeEscalation") === false) args.push("--security-opt", "no-new-privileges");
  for (const [h, ip] of Object.entries(r.hosts)) args.push("--add-host", `${h}:${ip}`);

  const envFile = join(r.work, `${r.name}.env`);
  const env = {
    ...r.env,
    KUBERNETES_SERVICE_HOST: r.apiServer.host,
    KUBERNETES_SERVICE_PORT: r.apiServer.port,
  };
  writeFileSync(
    envFile,
    Object.entries(env)
      .map(([k, v]) => `${k}=${v}`)
      .join("\n") + "\n",
    { mode: 0o600 },
  );
  args.push("--env-file", envFile);

  const volumes = new Map(objs(field(r.podSpec, "volumes")).map((v) => [String(v.name), v]));
  for (const m of objs(c.volumeMounts)) {
    const v = volumes.get(String(m.name));
    if (!v) throw new Error(`${r.name}: volumeMount ${String(m.name)} names no volume`);
    const target = String(m.mountPath);
    const mode = m.readOnly === true ? "ro" : "rw";
    const sub = typeof m.subPath === "string" ? m.subPath : undefined;
    if (isObj(v.emptyDir)) {
      const size =
        typeof v.emptyDir.sizeLimit === "string" ? `,size=${v.emptyDir.sizeLimit.replace(/i$/, "")}` : "";
      args.push("--tmpfs", `${target}:rw,mode=1777${size}`);
      continue;
    }
    let source: string;
    if (isObj(v.configMap)) {
      const cmName = String(v.configMap.name);
      const data = r.volumes.configMaps[cmName];
      if (!data) throw new Error(`${r.name}: no data for ConfigMap ${cmName}`);
      const dir = join(r.work, `${r.name}-cm-${String(m.name)}`);
      mkdirSync(dir, { recursive: true });
      for (const [file, content] of Object.entries(data)) writeFileSync(join(dir, file), content);
      ownTree(dir, r.uid);
      source = sub === undefined ? dir : join(dir, sub);
    } else if (isObj(v.secret)) {
      const dir = r.volumes.secrets[String(v.secret.secretName)];
      if (!dir) throw new Error(`${r.name}: no files for Secret ${String(v.secret.secretName)}`);
      source = sub === undefined ? dir : join(dir, sub);
    } else if (isObj(v.persistentVolumeClaim)) {
      const dir = r.volumes.claims[String(v.persistentVolumeClaim.claimName)];
      if (!dir)
        throw new Error(`${r.name}: no directory for PVC ${String(v.persistentVolumeClaim.claimName)}`);
      source = dir;
    } else {
      throw new Error(`${r.name}: volume ${String(m.name)} of a kind this runner does not provide`);
    }
    if (!existsSync(source)) throw new Error(`${r.name}: ${source} missing for ${target}`);
    args.push("--volume", `${source}:${target}:${mode}`);
  }
  args.push("--volume", `${r.serviceAccountDir}:/var/run/secrets/kubernetes.io/serviceaccount:ro`);
  args.push(r.image, ...strings(c.command), ...strings(c.args));
  return args;
}

/** The resident set of a running container's main process, in bytes (from /proc). */
export async function containerRss(name: string): Promise<number> {
  const pid = (await podman(["inspect", "--format", "{{.State.Pid}}", name])).trim();
  const { stdout } = await run("cat", [`/proc/${pid}/status`]);
  const kb = /VmRSS:\s+(\d+) kB/.exec(stdout)?.[1];
  if (kb === undefined) throw new Error(`no VmRSS for ${name} (pid ${pid})`);
  return Number(kb) * 1024;
}
