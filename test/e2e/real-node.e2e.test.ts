// The rig's opt-in real node (docs/rig.md "Real node"): a pod that tolerates its taint runs on a
// real kubelet + containerd + runc, with an image the node already has and with one pulled from the
// rig's registry. Skipped unless the node runs (`npm run cluster:up -- --real-node`).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { after, before, test } from "node:test";
import { PAUSE_IMAGE, REAL_NODE_NAME, REAL_NODE_TAINT, paths } from "../../hack/rig/real-node.ts";
import { readRealNode } from "../../hack/rig/real-node-run.ts";
import {
  apply,
  condition,
  createNamespace,
  deleteNamespace,
  get,
  kubectl,
  requireRig,
  waitFor,
  withRigLogsOnFailure,
} from "./harness.ts";

const node = readRealNode();
const skip = node === undefined ? "no real node (npm run cluster:up -- --real-node)" : false;
let ns = "";

before(async () => {
  if (skip !== false) return;
  await requireRig();
  ns = await createNamespace("real-node");
});

after(async () => {
  if (ns !== "") await deleteNamespace(ns);
});

function pod(name: string, image: string, imagePullPolicy: string): object {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: ns },
    spec: {
      nodeSelector: { [REAL_NODE_TAINT.key]: REAL_NODE_TAINT.value },
      tolerations: [{ key: REAL_NODE_TAINT.key, operator: "Exists", effect: "NoSchedule" }],
      terminationGracePeriodSeconds: 1,
      containers: [{ name: "c", image, imagePullPolicy }],
    },
  };
}

async function runningOnRealNode(name: string): Promise<void> {
  const p = await waitFor(
    `pod ${name} Ready`,
    async () => {
      const o = await get("pod", name, ns);
      return condition(o, "Ready") === "True" ? o : undefined;
    },
    { timeoutMs: 120_000 },
  );
  const spec = p.spec as { nodeName?: string };
  const status = p.status as { podIP?: string };
  assert.equal(spec.nodeName, REAL_NODE_NAME);
  assert.match(status.podIP ?? "", /^10\.244\.0\.\d+$/);
}

test("real node: Ready, tainted, and a tolerating pod runs there", { skip }, async () => {
  await withRigLogsOnFailure(async () => {
    const n = await get("node", REAL_NODE_NAME);
    assert.equal(condition(n, "Ready"), "True");
    const taints = (n?.spec as { taints?: { key: string; effect: string }[] }).taints ?? [];
    assert.ok(taints.some((t) => t.key === REAL_NODE_TAINT.key && t.effect === "NoSchedule"));
    await apply(pod("present", PAUSE_IMAGE, "Never"));
    await runningOnRealNode("present");
  });
});

test("real node: an image pulled from the rig's registry runs", { skip }, async () => {
  await withRigLogsOnFailure(async () => {
    const reg = node?.layout.registry;
    assert.ok(node !== undefined && reg !== undefined);
    // Push the node's own pause image to the registry with ctr: no podman needed.
    const path = `e2e/${ns}:1`;
    const ctr = (args: string[]): void => {
      const r = spawnSync("ctr", ["--address", paths(node.layout).socket, "-n", "k8s.io", ...args]);
      assert.equal(r.status, 0, `ctr ${args.join(" ")}: ${String(r.stderr)}`);
    };
    ctr(["images", "tag", "--force", PAUSE_IMAGE, `${reg.push}/${path}`]);
    ctr(["images", "push", "--plain-http", `${reg.push}/${path}`]);
    await apply(pod("pulled", `${reg.pull}/${path}`, "Always"));
    await runningOnRealNode("pulled");
    const sel = "involvedObject.name=pulled,reason=Pulled";
    const events = await kubectl(["-n", ns, "get", "events", "--field-selector", sel, "-o", "name"]);
    assert.notEqual(events.trim(), "", "the kubelet pulled the image");
    ctr(["images", "rm", `${reg.push}/${path}`]);
  });
});
