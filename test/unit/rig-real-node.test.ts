// The rig's opt-in real node (hack/rig/real-node.ts): the request, containerd's, the CNI's and the
// kubelet's configuration, and the pause image's OCI layout.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import {
  PAUSE_IMAGE,
  REAL_NODE_TAINT,
  cniConfig,
  containerdConfig,
  kubeletArgs,
  kubeletConfig,
  nodeCertSubject,
  ociLayout,
  realNodeRequested,
  registryConfig,
  registryMBps,
  registryVersion,
  type RealNodeLayout,
} from "../../hack/rig/real-node.ts";

const layout: RealNodeLayout = {
  name: "wave-real-0",
  dir: "/r/data/wave-real-0",
  apiserver: "https://127.0.0.1:6443",
  caFile: "/r/pki/ca.crt",
  bridge: "wavereal0",
  gateway: "10.244.0.1",
  podCIDR: "10.244.0.0/24",
  ports: { kubelet: 40001, healthz: 40002, stream: 40003 },
  cniBinDir: "/usr/lib/cni",
  runc: "/usr/sbin/runc",
};

test("real node: opt-in by flag or environment only", () => {
  assert.equal(realNodeRequested([], {}), false);
  assert.equal(realNodeRequested(["--real-node"], {}), true);
  assert.equal(realNodeRequested([], { WAVE_RIG_REAL_NODE: "1" }), true);
  assert.equal(realNodeRequested([], { WAVE_RIG_REAL_NODE: "0" }), false);
});

test("containerd: own root, state and socket; oom_score_adj restricted; pause image; cgroupfs", () => {
  const toml = containerdConfig(layout);
  assert.match(toml, /^root = "\/r\/data\/wave-real-0\/containerd\/root"$/m);
  assert.match(toml, /^state = "\/r\/data\/wave-real-0\/containerd\/state"$/m);
  assert.match(toml, /^ {2}address = "\/r\/data\/wave-real-0\/containerd\/containerd.sock"$/m);
  assert.match(toml, /^ {2}restrict_oom_score_adj = true$/m);
  assert.match(toml, /^ {2}netns_mounts_under_state_dir = true$/m);
  assert.match(toml, /^ {2}SystemdCgroup = false$/m);
  assert.ok(toml.includes(`sandbox_image = "${PAUSE_IMAGE}"`));
  assert.ok(toml.includes('stream_server_port = "40003"'));
  assert.ok(!toml.includes("registry.mirrors"), "no mirror without a registry");
  const registry = { push: "127.0.0.1:5000", pull: "127.0.0.1:5001", mbPerSec: 50 };
  const withRegistry = containerdConfig({ ...layout, registry });
  assert.ok(withRegistry.includes('[plugins."io.containerd.grpc.v1.cri".registry.mirrors."127.0.0.1:5001"]'));
  assert.ok(withRegistry.includes('endpoint = ["http://127.0.0.1:5001"]'));
});

test("CNI: the node's bridge, its gateway outside the pods' range", () => {
  const conf = cniConfig(layout) as { plugins: Record<string, unknown>[] };
  const bridge = conf.plugins[0] as {
    bridge: string;
    ipam: { ranges: { subnet: string; gateway: string }[][] };
  };
  assert.equal(bridge.bridge, "wavereal0");
  assert.deepEqual(bridge.ipam.ranges, [[{ subnet: "10.244.0.0/24", gateway: "10.244.0.1" }]]);
});

test("kubelet: cgroup v1 allowed, cgroupfs, tainted, listening on the bridge address", () => {
  const c = kubeletConfig(layout) as Record<string, unknown>;
  assert.equal(c["failCgroupV1"], false);
  assert.equal(c["cgroupDriver"], "cgroupfs");
  assert.equal(c["address"], "10.244.0.1");
  assert.equal(c["port"], 40001);
  assert.equal(c["readOnlyPort"], 0);
  assert.equal(c["containerRuntimeEndpoint"], "unix:///r/data/wave-real-0/containerd/containerd.sock");
  assert.deepEqual(c["registerWithTaints"], [
    { key: "wave.dev/real-node", value: "true", effect: "NoSchedule" },
  ]);
  const args = kubeletArgs(layout);
  assert.ok(args.includes("--node-ip=10.244.0.1"));
  assert.ok(args.includes("--hostname-override=wave-real-0"));
  assert.ok(args.includes(`--node-labels=${REAL_NODE_TAINT.key}=true`));
  assert.equal(nodeCertSubject("wave-real-0"), "/O=system:nodes/CN=system:node:wave-real-0");
});

test("pause image: an OCI layout whose index, manifest, config and layer digests agree", () => {
  const layer = Buffer.from("pretend this is a tar");
  const files = ociLayout(layer, PAUSE_IMAGE, ["/pause"]);
  const blob = (digest: string): Buffer => {
    const b = files.get(`blobs/sha256/${digest.replace("sha256:", "")}`);
    assert.ok(b !== undefined, `blob ${digest}`);
    assert.equal(`sha256:${createHash("sha256").update(b).digest("hex")}`, digest);
    return b;
  };
  const index = JSON.parse(String(files.get("index.json"))) as {
    manifests: { digest: string; size: number; annotations: Record<string, string> }[];
  };
  const entry = index.manifests[0];
  assert.ok(entry !== undefined);
  assert.equal(entry.annotations["io.containerd.image.name"], PAUSE_IMAGE);
  const manifestBytes = blob(entry.digest);
  assert.equal(manifestBytes.length, entry.size);
  const manifest = JSON.parse(String(manifestBytes)) as {
    config: { digest: string };
    layers: { digest: string }[];
  };
  const config = JSON.parse(String(blob(manifest.config.digest))) as {
    config: { Entrypoint: string[] };
    rootfs: { diff_ids: string[] };
  };
  assert.deepEqual(config.config.Entrypoint, ["/pause"]);
  assert.deepEqual(blob(manifest.layers[0]?.digest ?? ""), layer);
  assert.deepEqual(config.rootfs.diff_ids, [manifest.layers[0]?.digest]);
  assert.ok(files.has("oci-layout"));
});

test("registry: plain HTTP on loopback only; its version read from the wrapper module", () => {
  const c = registryConfig("/r/data/wave-real-0/registry/storage", 5000) as {
    http: { addr: string };
    storage: { filesystem: { rootdirectory: string } };
  };
  assert.equal(c.http.addr, "127.0.0.1:5000");
  assert.equal(c.storage.filesystem.rootdirectory, "/r/data/wave-real-0/registry/storage");
  const goMod = readFileSync(new URL("../../hack/rig/registry/go.mod", import.meta.url), "utf8");
  assert.match(registryVersion(goMod), /^v3\.\d+\.\d+$/);
  assert.throws(() => registryVersion("module x\n"), /distribution\/v3/);
});

test("registry bandwidth: 50 MB/s unless WAVE_RIG_REGISTRY_MBPS says otherwise", () => {
  assert.equal(registryMBps({}), 50);
  assert.equal(registryMBps({ WAVE_RIG_REGISTRY_MBPS: "12.5" }), 12.5);
  assert.equal(registryMBps({ WAVE_RIG_REGISTRY_MBPS: "off" }), 0);
  assert.throws(() => registryMBps({ WAVE_RIG_REGISTRY_MBPS: "fast" }), /MB\/s/);
});
