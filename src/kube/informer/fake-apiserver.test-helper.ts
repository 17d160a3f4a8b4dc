// A small apiserver over node:http for tests: it speaks the REST list/watch protocol (paginated
// lists with a resourceVersion, newline-delimited JSON watch streams, Status error bodies) and
// injects the failures a real connection sees: HTTP errors, 410 Gone mid-stream, dropped
// connections and silent stalls.
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { randomUUID } from "node:crypto";
import { KubeConfig } from "@kubernetes/client-node";
import type { KubeObject, Status } from "../../objects/kube.ts";
import { jsonPatch, mergePatch } from "../memory/patch.ts";

export type Fault =
  /** Answer the next matching request ("write": any but list/watch) with this code and a Status body. */
  | { op: "list" | "watch" | "write"; type: "status"; code: number; rawBody?: string }
  /** Send `afterEvents` events, then an ERROR event with a 410 Status, then end the stream. */
  | { op: "watch"; type: "gone-event"; afterEvents?: number }
  /** Send `afterEvents` events, then destroy the socket mid-stream. */
  | { op: "watch"; type: "drop"; afterEvents?: number }
  /** Send `afterEvents` events, then nothing, never closing (only a watchdog gets out). */
  | { op: "watch"; type: "stall"; afterEvents?: number };

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  contentType: string | undefined;
  body: unknown;
  /** "list" | "watch" | "get" | "create" | "replace" | "patch" | "delete" | "version". */
  op: string;
}

interface LoggedEvent {
  rv: number;
  type: "ADDED" | "MODIFIED" | "DELETED";
  object: KubeObject;
}

interface OpenWatch {
  resource: string;
  namespace: string | undefined;
  res: ServerResponse;
  bookmarks: boolean;
  sent: number;
  fault: Fault | undefined;
  stalled: boolean;
}

interface Target {
  resource: string;
  namespace: string | undefined;
  name: string | undefined;
}

const status = (code: number, reason: string, message: string): Status => ({
  apiVersion: "v1",
  kind: "Status",
  status: code < 400 ? "Success" : "Failure",
  code,
  reason,
  message,
});

const objKey = (o: KubeObject): string =>
  o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name ?? ""}` : (o.metadata.name ?? "");

export class FakeApiserver {
  readonly requests: RecordedRequest[] = [];
  readonly faults: Fault[] = [];
  #server = http.createServer((req, res) => void this.#handle(req, res));
  #sockets = new Set<Socket>();
  #watches = new Set<OpenWatch>();
  #rv = 100;
  #store = new Map<string, Map<string, KubeObject>>();
  #log = new Map<string, LoggedEvent[]>();
  #compactedAt = new Map<string, number>();
  #port = 0;

  async start(): Promise<this> {
    this.#server.on("connection", (s) => {
      this.#sockets.add(s);
      s.on("close", () => this.#sockets.delete(s));
    });
    await new Promise<void>((resolve) => this.#server.listen(0, "127.0.0.1", resolve));
    const addr = this.#server.address();
    if (addr === null || typeof addr === "string") throw new Error("no port");
    this.#port = addr.port;
    return this;
  }

  get url(): string {
    return `http://127.0.0.1:${this.#port}`;
  }

  /** A kubeconfig built in code for this server. */
  kubeConfig(token = "test-token"): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: "fake", server: this.url, skipTLSVerify: false }],
      users: [{ name: "tester", token }],
      contexts: [{ name: "fake", cluster: "fake", user: "tester", namespace: "team" }],
      currentContext: "fake",
    });
    return kc;
  }

  async close(): Promise<void> {
    for (const w of this.#watches) w.res.destroy();
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  get resourceVersion(): string {
    return String(this.#rv);
  }

  /** Open watch streams (stalled ones included). */
  get openWatches(): number {
    return this.#watches.size;
  }

  count(op: string): number {
    return this.requests.filter((r) => r.op === op).length;
  }

  /** Objects of a resource ("nodes", "pods", "karpenter.sh/nodepools"), sorted by key. */
  objects(resource: string): KubeObject[] {
    return [...(this.#store.get(resource)?.values() ?? [])].sort((a, b) =>
      objKey(a).localeCompare(objKey(b)),
    );
  }

  /** Creates or updates an object server-side and notifies watches. */
  upsert(resource: string, obj: KubeObject): KubeObject {
    const store = this.#resource(resource);
    const key = objKey(obj);
    const prev = store.get(key);
    const next = structuredClone(obj);
    next.metadata.uid = prev?.metadata.uid ?? randomUUID();
    next.metadata.creationTimestamp = prev?.metadata.creationTimestamp ?? "2026-01-01T00:00:00Z";
    next.metadata.resourceVersion = String(++this.#rv);
    store.set(key, next);
    this.#emit(resource, { rv: this.#rv, type: prev ? "MODIFIED" : "ADDED", object: next });
    return structuredClone(next);
  }

  /** Deletes an object server-side and notifies watches. */
  remove(resource: string, name: string, namespace?: string): void {
    const store = this.#resource(resource);
    const key = namespace ? `${namespace}/${name}` : name;
    const prev = store.get(key);
    if (!prev) throw new Error(`no ${resource} ${key}`);
    store.delete(key);
    const gone = structuredClone(prev);
    gone.metadata.resourceVersion = String(++this.#rv);
    this.#emit(resource, { rv: this.#rv, type: "DELETED", object: gone });
  }

  /** Cuts every open watch connection (a load balancer or apiserver restart). */
  dropWatches(): void {
    for (const w of [...this.#watches]) {
      this.#watches.delete(w);
      w.res.socket?.destroy();
    }
  }

  /** Forgets the event history: watches from older versions now get 410. */
  compact(resource: string): void {
    this.#log.set(resource, []);
    this.#compactedAt.set(resource, this.#rv);
  }

  /** Sends a BOOKMARK at the current version to watches that allow them. */
  bookmark(): void {
    for (const w of this.#watches) {
      if (w.bookmarks && !w.stalled)
        this.#line(w, { type: "BOOKMARK", object: { metadata: { resourceVersion: String(this.#rv) } } });
    }
  }

  #resource(resource: string): Map<string, KubeObject> {
    let m = this.#store.get(resource);
    if (!m) {
      m = new Map();
      this.#store.set(resource, m);
    }
    return m;
  }

  #emit(resource: string, ev: LoggedEvent): void {
    let log = this.#log.get(resource);
    if (!log) {
      log = [];
      this.#log.set(resource, log);
    }
    log.push(ev);
    for (const w of [...this.#watches]) {
      if (w.resource !== resource || w.stalled) continue;
      if (w.namespace !== undefined && ev.object.metadata.namespace !== w.namespace) continue;
      this.#sendEvent(w, { type: ev.type, object: ev.object });
    }
  }

  #takeFault(op: RecordedRequest["op"]): Fault | undefined {
    const kind = op === "list" || op === "watch" ? op : "write";
    const i = this.faults.findIndex((f) => f.op === kind);
    return i < 0 ? undefined : this.faults.splice(i, 1)[0];
  }

  #parse(path: string): Target | undefined {
    const segs = path
      .split("/")
      .filter((s) => s !== "")
      .map(decodeURIComponent);
    let rest: string[];
    let group = "";
    if (segs[0] === "api" && segs.length >= 3) rest = segs.slice(2);
    else if (segs[0] === "apis" && segs.length >= 4) {
      group = segs[1] ?? "";
      rest = segs.slice(3);
    } else return undefined;
    let namespace: string | undefined;
    if (rest[0] === "namespaces" && rest.length >= 3) {
      namespace = rest[1];
      rest = rest.slice(2);
    }
    const plural = rest[0];
    if (plural === undefined || rest.length > 2) return undefined;
    return { resource: group === "" ? plural : `${group}/${plural}`, namespace, name: rest[1] };
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", this.url);
    const chunks: Buffer[] = [];
    for await (const c of req as AsyncIterable<Buffer>) chunks.push(c);
    const raw = Buffer.concat(chunks).toString("utf8");
    let body: unknown;
    try {
      body = raw === "" ? undefined : JSON.parse(raw);
    } catch {
      this.#reply(res, 400, status(400, "BadRequest", "invalid JSON body"));
      return;
    }
    const method = req.method ?? "GET";
    const target = this.#parse(url.pathname);
    const watching = url.searchParams.get("watch") === "1" || url.searchParams.get("watch") === "true";
    const op =
      url.pathname === "/version"
        ? "version"
        : method === "GET"
          ? watching
            ? "watch"
            : target?.name === undefined
              ? "list"
              : "get"
          : method === "POST"
            ? "create"
            : method === "PUT"
              ? "replace"
              : method === "PATCH"
                ? "patch"
                : "delete";
    this.requests.push({
      method,
      path: url.pathname,
      query: url.searchParams,
      contentType: req.headers["content-type"],
      body,
      op,
    });
    if (req.headers.authorization !== "Bearer test-token") {
      this.#reply(res, 401, status(401, "Unauthorized", "Unauthorized"));
      return;
    }
    if (op === "version") {
      this.#reply(res, 200, { major: "1", minor: "33", gitVersion: "v1.33.1-fake", platform: "linux/amd64" });
      return;
    }
    if (!target) {
      this.#reply(res, 404, status(404, "NotFound", "the server could not find the requested resource"));
      return;
    }
    const fault = this.#takeFault(op);
    if (fault?.type === "status") {
      if (fault.rawBody !== undefined) {
        res.writeHead(fault.code, { "content-type": "text/plain" }).end(fault.rawBody);
      } else {
        this.#reply(
          res,
          fault.code,
          status(fault.code, fault.code === 410 ? "Expired" : "InternalError", `injected ${fault.code}`),
        );
      }
      return;
    }
    switch (op) {
      case "list":
        this.#list(target, url.searchParams, res);
        return;
      case "watch":
        this.#watch(target, url.searchParams, res, fault);
        return;
      default:
        this.#mutate(op, target, url.searchParams, req.headers["content-type"], body, res);
    }
  }

  #reply(res: ServerResponse, code: number, body: unknown): void {
    const text = JSON.stringify(body);
    res
      .writeHead(code, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
      .end(text);
  }

  #list(t: Target, q: URLSearchParams, res: ServerResponse): void {
    const all = this.objects(t.resource).filter(
      (o) => t.namespace === undefined || o.metadata.namespace === t.namespace,
    );
    const limit = Number(q.get("limit") ?? "0");
    const cont = q.get("continue");
    let start = 0;
    let rv = this.#rv;
    if (cont) {
      const token = JSON.parse(Buffer.from(cont, "base64url").toString("utf8")) as {
        after: string;
        rv: number;
      };
      if (token.rv < (this.#compactedAt.get(t.resource) ?? 0)) {
        this.#reply(res, 410, status(410, "Expired", "The provided continue parameter is too old"));
        return;
      }
      rv = token.rv;
      start = all.findIndex((o) => objKey(o) > token.after);
      if (start < 0) start = all.length;
    }
    const items = limit > 0 ? all.slice(start, start + limit) : all.slice(start);
    const last = items.at(-1);
    const more = limit > 0 && start + limit < all.length && last !== undefined;
    const metadata: Record<string, string> = { resourceVersion: String(rv) };
    if (more)
      metadata.continue = Buffer.from(JSON.stringify({ after: objKey(last), rv })).toString("base64url");
    // Items in a list carry no apiVersion/kind, as on a real apiserver.
    const bare = items.map(({ apiVersion: _a, kind: _k, ...rest }) => rest);
    this.#reply(res, 200, { apiVersion: "v1", kind: "List", metadata, items: bare });
  }

  #watch(t: Target, q: URLSearchParams, res: ServerResponse, fault: Fault | undefined): void {
    res.writeHead(200, { "content-type": "application/json", "transfer-encoding": "chunked" });
    res.flushHeaders();
    const w: OpenWatch = {
      resource: t.resource,
      namespace: t.namespace,
      res,
      bookmarks: q.get("allowWatchBookmarks") === "true",
      sent: 0,
      fault,
      stalled: false,
    };
    this.#watches.add(w);
    res.on("close", () => this.#watches.delete(w));
    if (fault?.type === "stall" && (fault.afterEvents ?? 0) === 0) {
      w.stalled = true;
      return;
    }
    const from = q.get("resourceVersion") ?? "";
    const matches = (o: KubeObject): boolean =>
      t.namespace === undefined || o.metadata.namespace === t.namespace;
    if (from === "" || from === "0") {
      for (const o of this.objects(t.resource))
        if (matches(o)) this.#sendEvent(w, { type: "ADDED", object: o });
      return;
    }
    if (Number(from) < (this.#compactedAt.get(t.resource) ?? 0)) {
      this.#line(w, { type: "ERROR", object: status(410, "Expired", `too old resource version: ${from}`) });
      this.#finish(w);
      return;
    }
    for (const ev of this.#log.get(t.resource) ?? []) {
      if (ev.rv > Number(from) && matches(ev.object) && this.#watches.has(w) && !w.stalled) {
        this.#sendEvent(w, { type: ev.type, object: ev.object });
      }
    }
  }

  // Sends one event, then applies the watch's fault once its event budget is spent.
  #sendEvent(w: OpenWatch, ev: { type: string; object: unknown }): void {
    this.#line(w, ev);
    w.sent++;
    const f = w.fault;
    if (f === undefined || f.type === "status" || w.sent < (f.afterEvents ?? 0)) return;
    w.fault = undefined;
    if (f.type === "gone-event") {
      this.#line(w, { type: "ERROR", object: status(410, "Expired", "too old resource version") });
      this.#finish(w);
    } else if (f.type === "drop") {
      this.#watches.delete(w);
      w.res.socket?.destroy();
    } else {
      w.stalled = true;
    }
  }

  #line(w: OpenWatch, ev: unknown): void {
    // Each line goes out in two writes split inside it, so clients must reassemble chunks.
    if (w.res.writableEnded || w.res.destroyed) return;
    const bytes = Buffer.from(JSON.stringify(ev) + "\n");
    const cut = Math.floor(bytes.length / 2);
    w.res.write(bytes.subarray(0, cut));
    w.res.write(bytes.subarray(cut));
  }

  #finish(w: OpenWatch): void {
    this.#watches.delete(w);
    w.res.end();
  }

  #mutate(
    op: string,
    t: Target,
    q: URLSearchParams,
    contentType: string | undefined,
    body: unknown,
    res: ServerResponse,
  ): void {
    const store = this.#resource(t.resource);
    const dryRun = q.get("dryRun") === "All";
    if (op === "create") {
      const obj = body as KubeObject;
      if (t.namespace !== undefined) obj.metadata.namespace = t.namespace;
      const key = objKey(obj);
      if (store.has(key)) {
        this.#reply(
          res,
          409,
          status(409, "AlreadyExists", `${t.resource} "${obj.metadata.name ?? ""}" already exists`),
        );
        return;
      }
      this.#reply(res, 201, dryRun ? obj : this.upsert(t.resource, obj));
      return;
    }
    const name = t.name ?? "";
    const key = t.namespace !== undefined ? `${t.namespace}/${name}` : name;
    const cur = store.get(key);
    if (!cur) {
      this.#reply(res, 404, status(404, "NotFound", `${t.resource} "${name}" not found`));
      return;
    }
    if (op === "get") {
      this.#reply(res, 200, cur);
    } else if (op === "replace") {
      const obj = body as KubeObject;
      if (obj.metadata.resourceVersion && obj.metadata.resourceVersion !== cur.metadata.resourceVersion) {
        this.#reply(
          res,
          409,
          status(
            409,
            "Conflict",
            `Operation cannot be fulfilled on ${t.resource} "${name}": the object has been modified`,
          ),
        );
        return;
      }
      this.#reply(res, 200, this.upsert(t.resource, obj));
    } else if (op === "patch") {
      const next = (
        contentType === "application/json-patch+json" ? jsonPatch(cur, body) : mergePatch(cur, body)
      ) as KubeObject;
      this.#reply(res, 200, dryRun ? next : this.upsert(t.resource, next));
    } else {
      const pre = (body as { preconditions?: { uid?: string } } | undefined)?.preconditions;
      if (pre?.uid !== undefined && pre.uid !== cur.metadata.uid) {
        this.#reply(
          res,
          409,
          status(409, "Conflict", `Precondition failed: UID in precondition: ${pre.uid}`),
        );
        return;
      }
      this.remove(t.resource, name, t.namespace);
      this.#reply(res, 200, status(200, "", ""));
    }
  }
}
