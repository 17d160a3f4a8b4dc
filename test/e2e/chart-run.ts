// What the chart e2e tests share: the rendered chart's container environment resolved the way a
// pod resolves it, a tainted NodePool of a test's own, workloads on it, Wave's do-not-disrupt on
// a warm node, and core's API with a bearer token.
import assert from "node:assert/strict";
import { DO_NOT_DISRUPT_ANNOTATION } from "../../src/objects/karpenter.ts";
import {
  DO_NOT_DISRUPT_NAMESPACE_ANNOTATION,
  DO_NOT_DISRUPT_OWNER_ANNOTATION,
  WARMUP_LABEL,
  WARMUP_POOL_LABEL,
} from "../../src/objects/wave.ts";
import { get, list, type KubeObject } from "./harness.ts";

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const field = (o: unknown, ...path: string[]): unknown => {
  let cur = o;
  for (const k of path) cur = isObj(cur) ? cur[k] : undefined;
  return cur;
};
const objs = (v: unknown): Obj[] => (Array.isArray(v) ? v.filter(isObj) : []);

/**
 * The environment the chart gives a container, with values a pod would resolve (downward API,
 * the tokens Secret), then `overrides` for what differs outside a pod: each override must name a
 * variable the chart sets, so the contract cannot drift unnoticed.
 */
export function chartEnv(
  container: Obj,
  pod: { namespace: string; name: string; secrets: Record<string, string> },
  overrides: Record<string, string>,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const e of objs(container.env)) {
    const name = String(e.name);
    if (typeof e.value === "string") env[name] = e.value;
    else if (field(e, "valueFrom", "fieldRef", "fieldPath") === "metadata.namespace")
      env[name] = pod.namespace;
    else if (field(e, "valueFrom", "fieldRef", "fieldPath") === "metadata.name") env[name] = pod.name;
    else {
      const key = field(e, "valueFrom", "secretKeyRef", "key");
      const value = typeof key === "string" ? pod.secrets[key] : undefined;
      assert.ok(value !== undefined, `no value for ${name} (${JSON.stringify(e.valueFrom)})`);
      env[name] = value;
    }
  }
  for (const [k, v] of Object.entries(overrides)) {
    assert.ok(k in env, `the chart sets no ${k} for ${pod.name}`);
    env[k] = v;
  }
  return env;
}

/** A Deployment of pause pods (KWOK never pulls or runs images) tolerating the pool's taint. */
export function poolDeployment(opts: {
  name: string;
  namespace: string;
  replicas: number;
  cpu: string;
  nodeSelector: Record<string, string>;
  pool: string;
  label: string;
}): object {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: opts.name, namespace: opts.namespace },
    spec: {
      replicas: opts.replicas,
      selector: { matchLabels: { app: opts.name } },
      template: {
        metadata: { labels: { app: opts.name } },
        spec: {
          nodeSelector: opts.nodeSelector,
          tolerations: [{ key: opts.label, operator: "Equal", value: opts.pool, effect: "NoSchedule" }],
          terminationGracePeriodSeconds: 0,
          containers: [
            {
              name: "app",
              image: "pause:3.10",
              resources: { requests: { cpu: opts.cpu, memory: "512Mi" } },
            },
          ],
        },
      },
    },
  };
}

export const annotations = (o: KubeObject | undefined): Record<string, string> =>
  o?.metadata.annotations ?? {};

/** Wave's do-not-disrupt, set by the install in `namespace`. */
export const protectedBy = (o: KubeObject | undefined, namespace: string): boolean => {
  const a = annotations(o);
  return (
    a[DO_NOT_DISRUPT_ANNOTATION] === "true" &&
    a[DO_NOT_DISRUPT_OWNER_ANNOTATION] === "warmup" &&
    a[DO_NOT_DISRUPT_NAMESPACE_ANNOTATION] === namespace
  );
};

/** A Running warmup pod of `pool` in `podNamespace` whose Node and NodeClaim carry Wave's do-not-disrupt. */
export async function protectedWarmup(
  pool: string,
  podNamespace: string,
  waveNamespace: string,
): Promise<{ pod: KubeObject; node: KubeObject; claim: KubeObject } | undefined> {
  const pods = await list("pods", {
    namespace: podNamespace,
    selector: `${WARMUP_LABEL}=true,${WARMUP_POOL_LABEL}=${pool}`,
  });
  for (const pod of pods) {
    const nodeName = pod.spec?.["nodeName"];
    if (pod.status?.phase !== "Running" || typeof nodeName !== "string") continue;
    const node = await get("node", nodeName);
    const id = node?.spec?.["providerID"];
    const claim = (await list("nodeclaims.karpenter.sh")).find((c) => c.status?.["providerID"] === id);
    if (node && claim && protectedBy(node, waveNamespace) && protectedBy(claim, waveNamespace))
      return { pod, node, claim };
  }
  return undefined;
}

/** core's API on 127.0.0.1:port with a bearer token; JSON in and out. */
export async function coreApi(
  port: number,
  method: string,
  path: string,
  token: string,
  body?: unknown,
): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, json: text === "" ? undefined : (JSON.parse(text) as unknown) };
}
