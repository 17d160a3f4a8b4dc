import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ARCH_LABEL, NODE_POOL_LABEL } from "../objects/karpenter.ts";
import {
  DEADLINE_ANNOTATION,
  MANAGED_BY_LABEL,
  PREPULL_IMAGE_ANNOTATION,
  WARMUP_LABEL,
  WARMUP_POOL_LABEL,
} from "../objects/wave.ts";
import type { Pod } from "../objects/kube.ts";
import {
  PAUSE_IMAGE,
  PREPULL_COMMAND,
  PREPULL_NO_EXEC_DIR,
  prepullPod,
  warmupPod,
  warmupPodName,
} from "./manifests.ts";
import { nodePool, pod, T0 } from "./testing/fixtures.ts";

describe("manifests", () => {
  it("builds a warmup pod pinned to the pool, tolerating its taints, with the largest pod's shape", () => {
    const pool = nodePool("gpu", {
      taints: [
        { key: "nvidia.com/gpu", effect: "NoSchedule" },
        { key: "team", value: "ml", effect: "NoExecute" },
      ],
    });
    const largest = pod("train", {
      nodeSelector: { [ARCH_LABEL]: "arm64", "kubernetes.io/hostname": "n1", [NODE_POOL_LABEL]: "other" },
    });
    const p = warmupPod({
      pool,
      namespace: "wave",
      largest,
      requests: { cpu: 2500, memory: 2 ** 30, pods: 1 },
      now: T0,
      ttlSeconds: 60,
      slot: 0,
    });
    assert.deepEqual(p.spec.nodeSelector, { [ARCH_LABEL]: "arm64", [NODE_POOL_LABEL]: "gpu" });
    assert.deepEqual(p.spec.tolerations, [
      { key: "nvidia.com/gpu", operator: "Exists", effect: "NoSchedule" },
      { key: "team", operator: "Equal", value: "ml", effect: "NoExecute" },
    ]);
    assert.deepEqual(p.spec.containers, [
      {
        name: "pause",
        image: PAUSE_IMAGE,
        imagePullPolicy: "IfNotPresent",
        resources: { requests: { cpu: "2500m", memory: "1Gi" } },
        securityContext: {
          allowPrivilegeEscalation: false,
          capabilities: { drop: ["ALL"] },
          readOnlyRootFilesystem: true,
          runAsNonRoot: true,
        },
      },
    ]);
    assert.deepEqual(p.metadata.labels, {
      [WARMUP_LABEL]: "true",
      [WARMUP_POOL_LABEL]: "gpu",
      [MANAGED_BY_LABEL]: "wave",
    });
    assert.equal(p.metadata.annotations?.[DEADLINE_ANNOTATION], new Date(T0 + 60_000).toISOString());
  });

  it("names pods within DNS limits and uniquely per slot", () => {
    const long = "p".repeat(80);
    assert.ok(warmupPodName(long, T0).length <= 63);
    assert.notEqual(warmupPodName("a", T0, 0), warmupPodName("a", T0, 1));
  });

  it("builds a pull pod bound to the node that never runs the entrypoint", () => {
    const p = prepullPod({
      pool: "g",
      node: "w1",
      image: "example.com/app:1",
      namespace: "wave",
      now: T0,
      deadlineSeconds: 120,
    });
    assert.equal(p.spec.nodeName, "w1");
    assert.equal(p.spec.restartPolicy, "Never");
    assert.deepEqual(p.spec.tolerations, [{ operator: "Exists" }]);
    assert.deepEqual(p.spec.containers[0]?.command, PREPULL_COMMAND);
    assert.equal((p.spec as { activeDeadlineSeconds?: number }).activeDeadlineSeconds, 120);
    assert.equal(p.metadata.annotations?.[PREPULL_IMAGE_ANNOTATION], "example.com/app:1");
  });

  // Issue #16: pre-pull pods ran the workload image's own /bin/sh, with no securityContext.
  it("pre-pull and warmup pods execute nothing from the workload image and pass the restricted standard", () => {
    const pull = prepullPod({
      pool: "g",
      node: "w1",
      image: "example.com/app:1",
      namespace: "wave",
      now: T0,
      deadlineSeconds: 60,
    });
    const c = pull.spec.containers[0] as (typeof pull.spec.containers)[0] & {
      volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
    };
    // The command lies inside an empty volume mounted over its directory: no image file can be there.
    const cmd = c.command?.[0] ?? "";
    const mount = c.volumeMounts?.find((m) => cmd.startsWith(`${m.mountPath}/`));
    assert.ok(mount, `command ${cmd} is not inside a mounted volume`);
    assert.equal(mount.mountPath, PREPULL_NO_EXEC_DIR);
    assert.equal(mount.readOnly, true);
    const vol = (pull.spec as { volumes?: { name: string; emptyDir?: object }[] }).volumes?.find(
      (v) => v.name === mount.name,
    );
    assert.ok(vol?.emptyDir, "the volume is an emptyDir");
    assert.deepEqual(c.args, [], "the image's CMD is not passed either");
    const warm = warmupPod({
      pool: nodePool("general"),
      namespace: "wave",
      largest: pod("a"),
      requests: { cpu: 1000, memory: 1 << 30 },
      now: T0,
      ttlSeconds: 600,
      slot: 0,
    });
    for (const p of [pull, warm]) {
      assert.deepEqual(restrictedViolations(p), [], p.metadata.name);
      assert.equal(
        (p.spec as { automountServiceAccountToken?: boolean }).automountServiceAccountToken,
        false,
      );
    }
  });
});

/**
 * The `restricted` Pod Security Standard's checks (v1.34) that a pod spec can fail, as the
 * apiserver's PodSecurity admission applies them; the rig proves the same against the real one.
 */
function restrictedViolations(pod: Pod): string[] {
  type SC = {
    runAsNonRoot?: boolean;
    runAsUser?: number;
    allowPrivilegeEscalation?: boolean;
    privileged?: boolean;
    capabilities?: { add?: string[]; drop?: string[] };
    seccompProfile?: { type?: string };
  };
  const spec = pod.spec as typeof pod.spec & {
    securityContext?: SC;
    hostNetwork?: boolean;
    hostPID?: boolean;
    hostIPC?: boolean;
    volumes?: Record<string, unknown>[];
  };
  const out: string[] = [];
  const podSc = spec.securityContext ?? {};
  if (spec.hostNetwork || spec.hostPID || spec.hostIPC) out.push("host namespaces");
  const allowedVolumes = new Set([
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
  ]);
  for (const v of spec.volumes ?? []) {
    for (const k of Object.keys(v)) if (k !== "name" && !allowedVolumes.has(k)) out.push(`volume type ${k}`);
  }
  if (podSc.runAsUser === 0) out.push("pod runAsUser 0");
  for (const c of [...(spec.initContainers ?? []), ...spec.containers]) {
    const sc: SC = (c as { securityContext?: SC }).securityContext ?? {};
    if (sc.privileged) out.push(`${c.name}: privileged`);
    if (sc.allowPrivilegeEscalation !== false) out.push(`${c.name}: allowPrivilegeEscalation != false`);
    if (!(sc.capabilities?.drop ?? []).includes("ALL")) out.push(`${c.name}: capabilities.drop lacks ALL`);
    if ((sc.capabilities?.add ?? []).some((a) => a !== "NET_BIND_SERVICE"))
      out.push(`${c.name}: capabilities.add`);
    if ((sc.runAsNonRoot ?? podSc.runAsNonRoot) !== true) out.push(`${c.name}: runAsNonRoot != true`);
    if ((sc.runAsUser ?? podSc.runAsUser) === 0) out.push(`${c.name}: runAsUser 0`);
    const seccomp = sc.seccompProfile?.type ?? podSc.seccompProfile?.type;
    if (seccomp !== "RuntimeDefault" && seccomp !== "Localhost") out.push(`${c.name}: seccompProfile`);
    if ((c as { ports?: { hostPort?: number }[] }).ports?.some((p) => p.hostPort))
      out.push(`${c.name}: hostPort`);
  }
  return out;
}
