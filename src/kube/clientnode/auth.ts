// How a request authenticates to the apiserver: its URL, TLS material, HTTP agent and
// Authorization header. Two implementations:
// - NativeAuth: the pod's ServiceAccount (in-cluster) and kubeconfigs whose user has client
//   certificates and/or a bearer token — what Wave's pods and the rig use. It reproduces what
//   client-node does for these (below) without loading client-node.
// - client-node's KubeConfig (kubeConfigAuth) for everything else: exec plugins, auth providers,
//   basic auth, impersonation, proxies, merged KUBECONFIG lists.
// client-node costs ~80 MiB of resident memory once imported (KubeConfig comes with all its
// generated API models and HTTP stacks; bench/pipeline/README.md), so it is loaded only for a
// kubeconfig that needs it.
import { existsSync, readFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import { createRequire } from "node:module";
import { isIPv6 } from "node:net";
import { delimiter, dirname, isAbsolute, join } from "node:path";
import type { KubeConfig } from "@kubernetes/client-node";
import { parse as parseYaml } from "yaml";

export interface ClusterAuth {
  /** "native" or "client-node": which implementation authenticates (diagnostics, tests). */
  readonly kind: "native" | "client-node";
  /** The apiserver URL, without a trailing slash. */
  readonly server: string;
  /** The context's namespace, if it names one. */
  readonly namespace: string | undefined;
  /** The kubeconfig context in use (the one asked for, else the file's current-context); in-cluster: none. */
  readonly context: string | undefined;
  /** Adds TLS material, the HTTP agent and the Authorization header to one request's options. */
  apply(opts: https.RequestOptions): Promise<void>;
}

/** Where a kubeconfig comes from (see loadKubeConfig in kubeconfig.ts). */
export interface AuthSource {
  path?: string;
  context?: string;
  inCluster?: boolean;
}

const SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";
/** client-node and client-go re-read a ServiceAccount token file at most this often. */
const TOKEN_FILE_TTL_MS = 60_000;

/** client-node, imported on first use (synchronously: the callers are synchronous). */
export function clientNode(): typeof import("@kubernetes/client-node") {
  return createRequire(import.meta.url)(
    "@kubernetes/client-node",
  ) as typeof import("@kubernetes/client-node");
}

interface NativeSettings {
  server: string;
  namespace: string | undefined;
  skipTlsVerify: boolean;
  tlsServerName: string | undefined;
  caFile: string | undefined;
  caData: string | undefined;
  certFile: string | undefined;
  certData: string | undefined;
  keyFile: string | undefined;
  keyData: string | undefined;
  token: string | undefined;
  context?: string | undefined;
  /** Re-read every TOKEN_FILE_TTL_MS (bound ServiceAccount tokens rotate). */
  tokenFile: string | undefined;
}

/** The same request options client-node's applyToHTTPSOptions sets for these settings. */
export class NativeAuth implements ClusterAuth {
  readonly kind = "native";
  readonly server: string;
  readonly namespace: string | undefined;
  readonly context: string | undefined;
  readonly #s: NativeSettings;
  readonly #now: () => number;
  #agent: http.Agent | undefined;
  #token: { value: string; readAt: number } | undefined;

  constructor(s: NativeSettings, now: () => number = Date.now) {
    this.#s = s;
    this.#now = now;
    this.server = s.server.replace(/\/+$/, "");
    this.namespace = s.namespace;
    this.context = s.context;
  }

  apply(opts: https.RequestOptions): Promise<void> {
    const s = this.#s;
    if (s.skipTlsVerify) opts.rejectUnauthorized = false;
    if (s.tlsServerName !== undefined) opts.servername = s.tlsServerName;
    // Files are read per request, as client-node does: rotated certificates apply at once.
    const ca = material(s.caFile, s.caData);
    if (ca) opts.ca = ca;
    const cert = material(s.certFile, s.certData);
    if (cert) opts.cert = cert;
    const key = material(s.keyFile, s.keyData);
    if (key) opts.key = key;
    const token = this.#bearer();
    if (token !== undefined) {
      // As client-node: the caller's header object gains the Authorization header.
      const headers = (opts.headers ?? {}) as http.OutgoingHttpHeaders;
      headers["Authorization"] = `Bearer ${token}`;
      opts.headers = headers;
    }
    this.#agent ??= this.server.startsWith("http:")
      ? new http.Agent()
      : new https.Agent({
          ...(opts.ca ? { ca: opts.ca } : {}),
          ...(opts.cert ? { cert: opts.cert } : {}),
          ...(opts.key ? { key: opts.key } : {}),
          ...(opts.rejectUnauthorized === false ? { rejectUnauthorized: false } : {}),
          ...(opts.servername !== undefined ? { servername: opts.servername } : {}),
        });
    opts.agent = this.#agent;
    return Promise.resolve();
  }

  #bearer(): string | undefined {
    const s = this.#s;
    if (s.tokenFile !== undefined) {
      const now = this.#now();
      if (this.#token === undefined || now - this.#token.readAt > TOKEN_FILE_TTL_MS)
        this.#token = { value: readFileSync(s.tokenFile, "utf8"), readAt: now };
      if (this.#token.value !== "") return this.#token.value;
    }
    return s.token !== undefined && s.token !== "" ? s.token : undefined;
  }
}

function material(file: string | undefined, data: string | undefined): Buffer | undefined {
  if (file !== undefined && file !== "") return readFileSync(file);
  if (data !== undefined && data !== "") return Buffer.from(data, "base64");
  return undefined;
}

/** The in-cluster settings, as client-node's loadFromCluster builds them. */
export function inClusterAuth(env: NodeJS.ProcessEnv, root = "", now?: () => number): NativeAuth {
  const host = env.KUBERNETES_SERVICE_HOST ?? "";
  const port = env.KUBERNETES_SERVICE_PORT ?? "";
  const scheme = port === "80" || port === "8080" || port === "8001" ? "http" : "https";
  const nsFile = `${root}${SA_DIR}/namespace`;
  return new NativeAuth(
    {
      server: `${scheme}://${isIPv6(host) ? `[${host}]` : host}:${port}`,
      namespace: existsSync(nsFile) ? readFileSync(nsFile, "utf8") : undefined,
      skipTlsVerify: false,
      tlsServerName: undefined,
      caFile: `${root}${SA_DIR}/ca.crt`,
      caData: undefined,
      certFile: undefined,
      certData: undefined,
      keyFile: undefined,
      keyData: undefined,
      token: undefined,
      tokenFile: `${root}${SA_DIR}/token`,
    },
    now,
  );
}

const CLUSTER_KEYS = new Set([
  "server",
  "certificate-authority",
  "certificate-authority-data",
  "insecure-skip-tls-verify",
  "tls-server-name",
  "extensions",
]);
const USER_KEYS = new Set([
  "client-certificate",
  "client-certificate-data",
  "client-key",
  "client-key-data",
  "token",
  "extensions",
]);

type Entry = Record<string, unknown>;
const isEntry = (v: unknown): v is Entry => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

function named(list: unknown, name: string, field: string): Entry | undefined {
  if (!Array.isArray(list)) return undefined;
  const hits = list.filter((e): e is Entry => isEntry(e) && e["name"] === name);
  if (hits.length !== 1) return undefined;
  const body = hits[0]?.[field];
  return isEntry(body) ? body : undefined;
}

/**
 * NativeAuth for a kubeconfig file's context, or undefined when the file needs client-node: any
 * setting beyond a server, its CA and TLS options and a user's certificates or token — and any
 * file that is missing, unreadable or inconsistent, so client-node reports those in its words.
 */
export function kubeconfigFileAuth(file: string, context?: string): NativeAuth | undefined {
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(file, "utf8"));
  } catch {
    return undefined;
  }
  if (!isEntry(doc)) return undefined;
  const ctxName = context !== undefined && context !== "" ? context : str(doc["current-context"]);
  if (ctxName === undefined || ctxName === "") return undefined;
  const ctx = named(doc["contexts"], ctxName, "context");
  const clusterName = str(ctx?.["cluster"]);
  const userName = str(ctx?.["user"]);
  if (!ctx || clusterName === undefined || userName === undefined) return undefined;
  const cluster = named(doc["clusters"], clusterName, "cluster");
  const user = named(doc["users"], userName, "user");
  if (!cluster || !user) return undefined;
  if (Object.keys(cluster).some((k) => !CLUSTER_KEYS.has(k))) return undefined;
  if (Object.keys(user).some((k) => !USER_KEYS.has(k))) return undefined;
  const server = str(cluster["server"]);
  if (server === undefined || !/^https?:\/\//.test(server)) return undefined;
  const skip = cluster["insecure-skip-tls-verify"];
  if (skip !== undefined && typeof skip !== "boolean") return undefined;
  const strings = ["certificate-authority", "certificate-authority-data", "tls-server-name"].map(
    (k) => cluster[k],
  );
  const userStrings = [...USER_KEYS].filter((k) => k !== "extensions").map((k) => user[k]);
  if ([...strings, ...userStrings].some((v) => v !== undefined && typeof v !== "string")) return undefined;
  const ns = ctx["namespace"];
  if (ns !== undefined && typeof ns !== "string") return undefined;
  // Relative file paths are relative to the kubeconfig's directory.
  const dir = dirname(file);
  const path = (v: unknown): string | undefined => {
    const p = str(v);
    return p === undefined || p === "" || isAbsolute(p) ? p : join(dir, p);
  };
  return new NativeAuth({
    server,
    namespace: ns !== undefined && ns !== "" ? ns : undefined,
    skipTlsVerify: skip === true,
    tlsServerName: str(cluster["tls-server-name"]),
    caFile: path(cluster["certificate-authority"]),
    caData: str(cluster["certificate-authority-data"]),
    certFile: path(user["client-certificate"]),
    certData: str(user["client-certificate-data"]),
    keyFile: path(user["client-key"]),
    keyData: str(user["client-key-data"]),
    token: str(user["token"]),
    tokenFile: undefined,
    context: ctxName,
  });
}

/**
 * NativeAuth for a source when client-node is not needed (see the header), else undefined. The
 * file search is client-node's loadFromDefault: $KUBECONFIG (one file; several are merged by
 * client-node), ~/.kube/config, then the pod's ServiceAccount.
 */
export function nativeAuth(src: AuthSource, env: NodeJS.ProcessEnv = process.env): NativeAuth | undefined {
  if (src.inCluster === true) {
    if (!env.KUBERNETES_SERVICE_HOST) return undefined;
    return src.context !== undefined && src.context !== "" ? undefined : inClusterAuth(env);
  }
  if (src.path !== undefined && src.path !== "") return kubeconfigFileAuth(src.path, src.context);
  const listed = (env.KUBECONFIG ?? "").split(delimiter).filter((f) => f !== "");
  if (listed.length > 1) return undefined;
  if (listed[0] !== undefined) return kubeconfigFileAuth(listed[0], src.context);
  const home = env.HOME;
  if (home === undefined || home === "") return undefined;
  const file = join(home, ".kube", "config");
  if (existsSync(file)) return kubeconfigFileAuth(file, src.context);
  if (existsSync(`${SA_DIR}/token`) && (src.context === undefined || src.context === ""))
    return inClusterAuth(env);
  return undefined;
}

/**
 * A client-node KubeConfig as a ClusterAuth. client-node refuses an http:// server unless
 * insecure-skip-tls-verify is set, although there is no TLS to verify (kubectl proxy, local test
 * servers): that is allowed on a copy, leaving https alone.
 */
export function kubeConfigAuth(kubeConfig: KubeConfig): ClusterAuth {
  const cluster = kubeConfig.getCurrentCluster();
  if (cluster === null) throw new Error("the kubeconfig has no current cluster");
  let kc = kubeConfig;
  if (cluster.server.startsWith("http:") && !cluster.skipTLSVerify) {
    kc = new (clientNode().KubeConfig)();
    kc.loadFromOptions({
      clusters: kubeConfig
        .getClusters()
        .map((c) => (c.name === cluster.name ? { ...c, skipTLSVerify: true } : c)),
      users: kubeConfig.getUsers(),
      contexts: kubeConfig.getContexts(),
      currentContext: kubeConfig.getCurrentContext(),
    });
  }
  const ns = kubeConfig.getContextObject(kubeConfig.getCurrentContext())?.namespace;
  return {
    kind: "client-node",
    server: cluster.server.replace(/\/+$/, ""),
    namespace: ns !== undefined && ns !== "" ? ns : undefined,
    context: kubeConfig.getCurrentContext(),
    apply: (opts) => kc.applyToHTTPSOptions(opts),
  };
}
