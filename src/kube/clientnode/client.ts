// The real-cluster adapter: requests are raw JSON over node:http(s) so objects keep their wire
// shapes (client-node's model classes would turn timestamps into Date objects and drop unknown
// fields). Authentication (TLS material, bearer tokens, exec plugins) comes from a ClusterAuth:
// native for common kubeconfigs, @kubernetes/client-node's KubeConfig otherwise (auth.ts).
import http, { type IncomingMessage } from "node:http";
import https from "node:https";
import type { KubeConfig } from "@kubernetes/client-node";
import { kubeConfigAuth, type ClusterAuth } from "./auth.ts";
import { KINDS, apiVersionOf, type KindName, type KindTypes } from "../kinds.ts";
import {
  KubeApiError,
  type DeleteOptions,
  type KubeClient,
  type ListOptions,
  type ObjectList,
  type PatchOptions,
  type WatchEvent,
  type WatchOptions,
  type WriteOptions,
} from "../port.ts";
import type { KubeObject, Status } from "../../objects/kube.ts";
import { JsonLinesDecoder } from "./lines.ts";
import { PATCH_CONTENT_TYPES, queryString, reasonForCode, resourcePath } from "./paths.ts";

export type ClientNodeKubeOptions = (
  { kubeConfig: KubeConfig; auth?: undefined } | { auth: ClusterAuth; kubeConfig?: undefined }
) & {
  /** For namespaced requests that name no namespace (default: the context's, else "default"). */
  defaultNamespace?: string;
  /** Deadline for non-watch requests, ms (default 30 000). Watches end by timeoutSeconds or abort. */
  requestTimeoutMs?: number;
  userAgent?: string;
};

/** A request that never got an HTTP answer (refused, reset, DNS, TLS, timeout). */
export class KubeTransportError extends Error {
  readonly code: string | undefined;
  constructor(message: string, cause: unknown) {
    super(message, { cause });
    this.name = "KubeTransportError";
    this.code = (cause as { code?: unknown } | undefined)?.code as string | undefined;
  }
}

export interface VersionInfo {
  major: string;
  minor: string;
  gitVersion: string;
  platform?: string;
}

interface Request {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  path: string;
  body?: unknown;
  contentType?: string;
  signal?: AbortSignal;
  /** Watches are long-lived: no request deadline. */
  stream?: boolean;
}

export class ClientNodeKube implements KubeClient {
  readonly #auth: ClusterAuth;
  readonly #server: string;
  readonly #defaultNamespace: string;
  readonly #timeoutMs: number;
  readonly #userAgent: string;

  constructor(opts: ClientNodeKubeOptions) {
    this.#auth = opts.auth ?? kubeConfigAuth(opts.kubeConfig);
    this.#server = this.#auth.server;
    this.#defaultNamespace = opts.defaultNamespace ?? this.#auth.namespace ?? "default";
    this.#timeoutMs = opts.requestTimeoutMs ?? 30_000;
    this.#userAgent = opts.userAgent ?? "wave";
  }

  /** How requests authenticate: "native" or through "client-node" (auth.ts). */
  get authKind(): ClusterAuth["kind"] {
    return this.#auth.kind;
  }

  /** The apiserver URL this client talks to. */
  get server(): string {
    return this.#server;
  }

  /** The kubeconfig context this client uses (undefined in a pod: its ServiceAccount). */
  get context(): string | undefined {
    return this.#auth.context;
  }

  /** Where this client writes, for a CLI line: `cluster https://… (context prod)`. */
  get target(): string {
    return `cluster ${this.#server}${this.#auth.context !== undefined ? ` (context ${this.#auth.context})` : " (in-cluster)"}`;
  }

  get defaultNamespace(): string {
    return this.#defaultNamespace;
  }

  /** GET /version: the cheapest authenticated round trip (used to report an unreachable apiserver). */
  version(signal?: AbortSignal): Promise<VersionInfo> {
    return this.#json<VersionInfo>({ method: "GET", path: "/version", ...(signal ? { signal } : {}) });
  }

  async list<K extends KindName>(kind: K, opts: ListOptions = {}): Promise<ObjectList<KindTypes[K]>> {
    const path =
      resourcePath(kind, opts.namespace) +
      queryString({
        labelSelector: opts.labelSelector,
        fieldSelector: opts.fieldSelector,
        limit: opts.limit,
        continue: opts.continue,
        resourceVersion: opts.resourceVersion,
      });
    const body = await this.#json<{
      items?: KindTypes[K][] | null;
      metadata?: { resourceVersion?: string; continue?: string };
    }>({ method: "GET", path });
    const out: ObjectList<KindTypes[K]> = {
      // Lists do not repeat apiVersion/kind on items; restore them so objects are self-describing.
      items: (body.items ?? []).map((item) => withTypeMeta(kind, item)),
      resourceVersion: body.metadata?.resourceVersion ?? "",
    };
    if (body.metadata?.continue !== undefined && body.metadata.continue !== "")
      out.continue = body.metadata.continue;
    return out;
  }

  async *watch<K extends KindName>(
    kind: K,
    opts: WatchOptions,
    signal?: AbortSignal,
  ): AsyncIterable<WatchEvent<KindTypes[K]>> {
    if (signal?.aborted) return;
    const path =
      resourcePath(kind, opts.namespace) +
      queryString({
        watch: 1,
        resourceVersion: opts.resourceVersion,
        allowWatchBookmarks: opts.allowWatchBookmarks === true ? "true" : undefined,
        timeoutSeconds: opts.timeoutSeconds,
        labelSelector: opts.labelSelector,
        fieldSelector: opts.fieldSelector,
      });
    let res: IncomingMessage;
    try {
      res = await this.#send({ method: "GET", path, stream: true, ...(signal ? { signal } : {}) });
    } catch (err) {
      if (signal?.aborted) return;
      throw err;
    }
    if (res.statusCode !== 200) throw await errorFrom(res, "GET", path);
    const decoder = new JsonLinesDecoder();
    try {
      for await (const chunk of res as AsyncIterable<Buffer>) {
        for (const value of decoder.push(chunk)) yield toWatchEvent(kind, value);
      }
      for (const value of decoder.end()) yield toWatchEvent(kind, value);
    } catch (err) {
      // Our own abort (stop, watchdog) ends the stream quietly; anything else is the caller's to handle.
      if (signal?.aborted) return;
      if (err instanceof KubeApiError || err instanceof KubeTransportError) throw err;
      throw new KubeTransportError(`watch ${path}: ${(err as Error).message}`, err);
    } finally {
      res.destroy();
    }
  }

  get<K extends KindName>(kind: K, name: string, namespace?: string): Promise<KindTypes[K]> {
    const path = resourcePath(kind, this.#ns(kind, namespace), name);
    return this.#json<KindTypes[K]>({ method: "GET", path });
  }

  create<K extends KindName>(kind: K, obj: KindTypes[K], opts: WriteOptions = {}): Promise<KindTypes[K]> {
    const ns = this.#ns(kind, opts.namespace ?? obj.metadata.namespace);
    const path = resourcePath(kind, ns) + writeQuery(opts);
    return this.#json<KindTypes[K]>({ method: "POST", path, body: withTypeMeta(kind, obj) });
  }

  replace<K extends KindName>(kind: K, obj: KindTypes[K], opts: WriteOptions = {}): Promise<KindTypes[K]> {
    const meta = obj.metadata;
    if (meta.name === undefined || meta.name === "")
      throw new Error(`replace ${kind}: metadata.name is required`);
    const path =
      resourcePath(kind, this.#ns(kind, opts.namespace ?? meta.namespace), meta.name) + writeQuery(opts);
    return this.#json<KindTypes[K]>({ method: "PUT", path, body: withTypeMeta(kind, obj) });
  }

  patch<K extends KindName>(
    kind: K,
    name: string,
    patch: unknown,
    opts: PatchOptions = {},
  ): Promise<KindTypes[K]> {
    const type = opts.type ?? "merge";
    if (type === "apply" && (opts.fieldManager === undefined || opts.fieldManager === "")) {
      return Promise.reject(new Error(`apply patch of ${kind} ${name}: fieldManager is required`));
    }
    const ns = this.#ns(kind, opts.namespace);
    let body = patch;
    if (type === "apply" && patch !== null && typeof patch === "object" && !Array.isArray(patch)) {
      // An apply body is a whole (partial) object: it must say what it is.
      const p = withTypeMeta(kind, patch as KubeObject);
      p.metadata = { ...p.metadata, name, ...(ns !== undefined ? { namespace: ns } : {}) };
      body = p;
    }
    const path =
      resourcePath(kind, ns, name) +
      (opts.subresource === undefined ? "" : `/${opts.subresource}`) +
      queryString({
        fieldManager: opts.fieldManager,
        force: type === "apply" && opts.force === true ? "true" : undefined,
        dryRun: opts.dryRun === true ? "All" : undefined,
      });
    return this.#json<KindTypes[K]>({ method: "PATCH", path, body, contentType: PATCH_CONTENT_TYPES[type] });
  }

  async delete(kind: KindName, name: string, opts: DeleteOptions = {}): Promise<void> {
    const path = resourcePath(kind, this.#ns(kind, opts.namespace), name);
    const body: Record<string, unknown> = { apiVersion: "v1", kind: "DeleteOptions" };
    if (opts.gracePeriodSeconds !== undefined) body.gracePeriodSeconds = opts.gracePeriodSeconds;
    if (opts.propagationPolicy !== undefined) body.propagationPolicy = opts.propagationPolicy;
    if (opts.uid !== undefined) body.preconditions = { uid: opts.uid };
    await this.#json<unknown>({ method: "DELETE", path, body });
  }

  async evict(name: string, namespace: string, opts: { uid?: string } = {}): Promise<void> {
    const path = resourcePath("Pod", namespace, name) + "/eviction";
    const body: Record<string, unknown> = {
      apiVersion: "policy/v1",
      kind: "Eviction",
      metadata: { name, namespace },
    };
    if (opts.uid !== undefined) body.deleteOptions = { preconditions: { uid: opts.uid } };
    await this.#json<unknown>({ method: "POST", path, body });
  }

  // ---- transport ----

  #ns(kind: KindName, namespace: string | undefined): string | undefined {
    if (!KINDS[kind].namespaced) return undefined;
    return namespace !== undefined && namespace !== "" ? namespace : this.#defaultNamespace;
  }

  async #json<T>(req: Request): Promise<T> {
    const res = await this.#send(req);
    const text = await readBody(res, req);
    if (res.statusCode === undefined || res.statusCode < 200 || res.statusCode >= 300) {
      throw statusFromBody(res.statusCode ?? 0, text, req.method, req.path);
    }
    // A delete's answer (the object or a Status) is informational; some proxies send none.
    if (req.method === "DELETE" && text.trim() === "") return undefined as T;
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new KubeTransportError(
        `${req.method} ${req.path}: the apiserver answered with invalid JSON`,
        undefined,
      );
    }
  }

  async #send(req: Request): Promise<IncomingMessage> {
    const url = new URL(this.#server + req.path);
    const headers: Record<string, string> = { Accept: "application/json", "User-Agent": this.#userAgent };
    const payload = req.body === undefined ? undefined : Buffer.from(JSON.stringify(req.body));
    if (payload !== undefined) {
      headers["Content-Type"] = req.contentType ?? "application/json";
      headers["Content-Length"] = String(payload.length);
    }
    const opts: https.RequestOptions = { method: req.method, headers };
    // TLS material, the agent and the Authorization header (tokens, exec plugins) from the kubeconfig.
    await this.#auth.apply(opts);
    const signals = [
      req.signal,
      req.stream === true ? undefined : AbortSignal.timeout(this.#timeoutMs),
    ].filter((s): s is AbortSignal => s !== undefined);
    if (signals.length > 0) opts.signal = AbortSignal.any(signals);
    const mod = url.protocol === "http:" ? http : https;
    return new Promise<IncomingMessage>((resolve, reject) => {
      const r = mod.request(url, opts, resolve);
      r.on("error", (err) => {
        const what = req.signal?.aborted ? "aborted" : opts.signal?.aborted ? "timed out" : err.message;
        reject(new KubeTransportError(`${req.method} ${this.#server}${req.path}: ${what}`, err));
      });
      r.end(payload);
    });
  }
}

function writeQuery(opts: WriteOptions): string {
  return queryString({ fieldManager: opts.fieldManager, dryRun: opts.dryRun === true ? "All" : undefined });
}

function withTypeMeta<T>(kind: KindName, obj: T): T {
  const k = KINDS[kind];
  return { apiVersion: apiVersionOf(k), kind: k.kind, ...obj };
}

async function readBody(res: IncomingMessage, req: Request): Promise<string> {
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of res as AsyncIterable<Buffer>) chunks.push(chunk);
  } catch (err) {
    throw new KubeTransportError(`${req.method} ${req.path}: ${(err as Error).message}`, err);
  }
  return Buffer.concat(chunks).toString("utf8");
}

async function errorFrom(res: IncomingMessage, method: string, path: string): Promise<KubeApiError> {
  const text = await readBody(res, { method: "GET", path });
  return statusFromBody(res.statusCode ?? 0, text, method, path);
}

/** The apiserver's Status from an error body, or one synthesised from the HTTP code. */
export function statusFromBody(code: number, text: string, method: string, path: string): KubeApiError {
  try {
    const v = JSON.parse(text) as Partial<Status> | null;
    if (v !== null && typeof v === "object" && v.kind === "Status") {
      return new KubeApiError({ ...v, code: v.code ?? code });
    }
  } catch {
    // not JSON: a proxy or load balancer answered
  }
  const snippet = text.trim().slice(0, 200);
  return new KubeApiError({
    apiVersion: "v1",
    kind: "Status",
    status: "Failure",
    code,
    reason: reasonForCode(code),
    message: `${method} ${path}: HTTP ${code}${snippet === "" ? "" : `: ${snippet}`}`,
  });
}

function toWatchEvent<K extends KindName>(kind: K, value: unknown): WatchEvent<KindTypes[K]> {
  const ev = value as { type?: unknown; object?: unknown } | null;
  if (
    ev === null ||
    typeof ev !== "object" ||
    typeof ev.type !== "string" ||
    ev.object === null ||
    typeof ev.object !== "object"
  ) {
    throw new KubeTransportError(`unexpected watch event: ${JSON.stringify(value).slice(0, 200)}`, undefined);
  }
  switch (ev.type) {
    case "ADDED":
    case "MODIFIED":
    case "DELETED":
      return { type: ev.type, object: withTypeMeta(kind, ev.object as KindTypes[K]) };
    case "BOOKMARK":
      return { type: "BOOKMARK", object: ev.object as { metadata: { resourceVersion: string } } };
    case "ERROR":
      return { type: "ERROR", object: ev.object };
    default:
      throw new KubeTransportError(`unknown watch event type "${ev.type}"`, undefined);
  }
}
