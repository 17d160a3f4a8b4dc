// The rig's opt-in real node (`cluster:up --real-node` or WAVE_RIG_REAL_NODE=1): Kubernetes' own
// kubelet from the rig's kube tree, containerd and the CNI plugins (Debian packages) and runc,
// registered to the rig's apiserver beside the KWOK nodes. This file only builds its configuration
// (pure, unit-tested); real-node-run.ts starts and stops it. See docs/rig.md "Real node".
import { createHash } from "node:crypto";

/** Only pods that tolerate this taint land on the real node. */
export const REAL_NODE_TAINT = { key: "wave.dev/real-node", value: "true", effect: "NoSchedule" } as const;
/** The label a pod selects the real node by (same key as the taint). */
export const REAL_NODE_LABEL = `${REAL_NODE_TAINT.key}=${REAL_NODE_TAINT.value}`;
export const REAL_NODE_NAME = "wave-real-0";
/** The sandbox ("pause") image: built from hack/rig/pause and imported, so no registry is needed. */
export const PAUSE_IMAGE = "localhost/wave-rig-pause:1";

export interface RealNodeLayout {
  name: string;
  /** .rig/data/<name>: containerd's root and state, the kubelet's root, CNI config and IPAM. */
  dir: string;
  apiserver: string;
  caFile: string;
  /** The node's bridge; its address is the node's InternalIP and the kubelet's listen address. */
  bridge: string;
  gateway: string;
  podCIDR: string;
  ports: { kubelet: number; healthz: number; stream: number };
  cniBinDir: string;
  runc: string;
  /**
   * The rig's plain-HTTP registry, when one runs: `push` (direct) and `pull` (through the throttle
   * at `mbPerSec`, what the node's images name), both host:port on loopback.
   */
  registry?: { push: string; pull: string; mbPerSec: number };
}

export function realNodeRequested(argv: string[], env: NodeJS.ProcessEnv = process.env): boolean {
  return argv.includes("--real-node") || env["WAVE_RIG_REAL_NODE"] === "1";
}

export const paths = (l: RealNodeLayout) => ({
  containerdConfig: `${l.dir}/containerd/config.toml`,
  socket: `${l.dir}/containerd/containerd.sock`,
  cniConfDir: `${l.dir}/cni/net.d`,
  kubeletConfig: `${l.dir}/kubelet/config.json`,
  kubeletRoot: `${l.dir}/kubelet/root`,
  kubeconfig: `${l.dir}/kubeconfig`,
  cert: `${l.dir}/pki/kubelet.crt`,
  key: `${l.dir}/pki/kubelet.key`,
});

const q = (s: string): string => JSON.stringify(s);

/**
 * containerd 1.6 (Debian bookworm's) with its own root, state and socket. restrict_oom_score_adj:
 * this machine refuses a negative oom_score_adj even to root, and the CRI asks -998 for every
 * sandbox (runc then fails with "can't get final child's PID from pipe: EOF").
 */
export function containerdConfig(l: RealNodeLayout): string {
  const p = paths(l);
  const cri = `[plugins."io.containerd.grpc.v1.cri"]`;
  const lines = [
    "version = 2",
    `root = ${q(`${l.dir}/containerd/root`)}`,
    `state = ${q(`${l.dir}/containerd/state`)}`,
    "[grpc]",
    `  address = ${q(p.socket)}`,
    "[ttrpc]",
    `  address = ${q(`${p.socket}.ttrpc`)}`,
    "[metrics]",
    '  address = ""',
    cri,
    `  sandbox_image = ${q(PAUSE_IMAGE)}`,
    "  restrict_oom_score_adj = true",
    // Sandboxes' network namespaces under the state dir, not the host's /var/run/netns.
    "  netns_mounts_under_state_dir = true",
    `  stream_server_address = ${q(l.gateway)}`,
    `  stream_server_port = ${q(String(l.ports.stream))}`,
    `${cri.slice(0, -1)}.containerd]`,
    '  snapshotter = "overlayfs"',
    '  default_runtime_name = "runc"',
    `${cri.slice(0, -1)}.containerd.runtimes.runc]`,
    '  runtime_type = "io.containerd.runc.v2"',
    `${cri.slice(0, -1)}.containerd.runtimes.runc.options]`,
    "  SystemdCgroup = false",
    `  BinaryName = ${q(l.runc)}`,
    `${cri.slice(0, -1)}.cni]`,
    `  bin_dir = ${q(l.cniBinDir)}`,
    `  conf_dir = ${q(p.cniConfDir)}`,
  ];
  if (l.registry !== undefined) {
    lines.push(
      `${cri.slice(0, -1)}.registry.mirrors.${q(l.registry.pull)}]`,
      `  endpoint = [${q(`http://${l.registry.pull}`)}]`,
    );
  }
  return lines.join("\n") + "\n";
}

/** A bridge with host-local IPAM: pods reach each other and the host (the gateway) directly. */
export function cniConfig(l: RealNodeLayout): object {
  return {
    cniVersion: "1.0.0",
    name: "wave-real",
    plugins: [
      {
        type: "bridge",
        bridge: l.bridge,
        isGateway: true,
        ipMasq: false,
        hairpinMode: true,
        ipam: {
          type: "host-local",
          ranges: [[{ subnet: l.podCIDR, gateway: l.gateway }]],
          routes: [{ dst: "0.0.0.0/0" }],
          dataDir: `${l.dir}/cni/ipam`,
        },
      },
      { type: "portmap", capabilities: { portMappings: true } },
    ],
  };
}

/**
 * The kubelet's KubeletConfiguration. failCgroupV1 false: this machine mounts the cgroup v1
 * controllers (v2 only as a secondary mount), which kubelet 1.36 refuses by default; cgroupfs
 * because there is no systemd. It listens on the bridge address only, trusting the rig's CA and
 * allowing anonymous reads (the rig's apiserver has no kubelet client certificate).
 */
export function kubeletConfig(l: RealNodeLayout): object {
  return {
    apiVersion: "kubelet.config.k8s.io/v1beta1",
    kind: "KubeletConfiguration",
    failCgroupV1: false,
    cgroupDriver: "cgroupfs",
    containerRuntimeEndpoint: `unix://${paths(l).socket}`,
    address: l.gateway,
    port: l.ports.kubelet,
    readOnlyPort: 0,
    healthzBindAddress: "127.0.0.1",
    healthzPort: l.ports.healthz,
    authentication: {
      anonymous: { enabled: true },
      webhook: { enabled: false },
      x509: { clientCAFile: l.caFile },
    },
    authorization: { mode: "AlwaysAllow" },
    registerWithTaints: [REAL_NODE_TAINT],
    podCIDR: l.podCIDR,
    maxPods: 50,
    failSwapOn: false,
    // The disk and memory are shared with the rest of the machine: no eviction for its use.
    evictionHard: { "memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%" },
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    serializeImagePulls: false,
    enforceNodeAllocatable: [],
    localStorageCapacityIsolation: false,
    makeIPTablesUtilChains: false,
    podLogsDir: `${l.dir}/kubelet/pod-logs`,
    resolvConf: "",
  };
}

export function kubeletArgs(l: RealNodeLayout): string[] {
  const p = paths(l);
  return [
    `--config=${p.kubeletConfig}`,
    `--kubeconfig=${p.kubeconfig}`,
    `--root-dir=${p.kubeletRoot}`,
    `--cert-dir=${l.dir}/pki/serving`,
    `--hostname-override=${l.name}`,
    `--node-ip=${l.gateway}`,
    `--node-labels=${REAL_NODE_LABEL}`,
  ];
}

/** The node's kubeconfig: a client certificate for system:node:<name> from the rig's CA. */
export function nodeKubeconfig(l: RealNodeLayout): object {
  const p = paths(l);
  return {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "wave-rig", cluster: { server: l.apiserver, "certificate-authority": l.caFile } }],
    users: [{ name: l.name, user: { "client-certificate": p.cert, "client-key": p.key } }],
    contexts: [{ name: l.name, context: { cluster: "wave-rig", user: l.name } }],
    "current-context": l.name,
  };
}

export const nodeCertSubject = (name: string): string => `/O=system:nodes/CN=system:node:${name}`;

const sha256 = (b: Buffer): string => `sha256:${createHash("sha256").update(b).digest("hex")}`;

/**
 * An OCI image layout (file path → content) of one uncompressed layer, named `name` for
 * `ctr images import`: how the pause image reaches containerd without a registry.
 */
export function ociLayout(layerTar: Buffer, name: string, entrypoint: string[]): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  const blob = (b: Buffer): { digest: string; size: number } => {
    const digest = sha256(b);
    files.set(`blobs/sha256/${digest.slice("sha256:".length)}`, b);
    return { digest, size: b.length };
  };
  const layer = blob(layerTar);
  const config = blob(
    Buffer.from(
      JSON.stringify({
        architecture: "amd64",
        os: "linux",
        config: { Entrypoint: entrypoint },
        rootfs: { type: "layers", diff_ids: [layer.digest] },
      }),
    ),
  );
  const manifest = blob(
    Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: "application/vnd.oci.image.manifest.v1+json",
        config: { mediaType: "application/vnd.oci.image.config.v1+json", ...config },
        layers: [{ mediaType: "application/vnd.oci.image.layer.v1.tar", ...layer }],
      }),
    ),
  );
  files.set("oci-layout", Buffer.from(JSON.stringify({ imageLayoutVersion: "1.0.0" })));
  const ref = { "io.containerd.image.name": name, "org.opencontainers.image.ref.name": name };
  const entry = { mediaType: "application/vnd.oci.image.manifest.v1+json", ...manifest, annotations: ref };
  files.set("index.json", Buffer.from(JSON.stringify({ schemaVersion: 2, manifests: [entry] })));
  return files;
}

/** The local registry's configuration (distribution v3; JSON is YAML): plain HTTP on loopback. */
export function registryConfig(root: string, port: number): object {
  return {
    version: 0.1,
    log: { level: "warn" },
    storage: { filesystem: { rootdirectory: root }, delete: { enabled: true } },
    http: { addr: `127.0.0.1:${port}` },
  };
}

/**
 * The registry's bandwidth to the node in MB/s (WAVE_RIG_REGISTRY_MBPS, default 50 MB/s ≈ 400
 * Mbit/s: the order of one node's pull from a regional registry; 0 or "off": no limit).
 */
export function registryMBps(env: NodeJS.ProcessEnv = process.env): number {
  const v = env["WAVE_RIG_REGISTRY_MBPS"];
  if (v === undefined || v === "") return 50;
  if (v === "off") return 0;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`WAVE_RIG_REGISTRY_MBPS=${v}: a number of MB/s or "off"`);
  return n;
}

/** The pinned distribution version in hack/rig/registry/go.mod (one place for the version). */
export function registryVersion(goMod: string): string {
  const v = /^\s*github\.com\/distribution\/distribution\/v3 (v\S+)/m.exec(goMod)?.[1];
  if (v === undefined) throw new Error("hack/rig/registry/go.mod does not require distribution/v3");
  return v;
}
