// Talking to core: JSON over fetch with the bearer token, and the live stream read with fetch
// (EventSource cannot send an Authorization header).
import type {
  AuthInfoDto,
  ClusterDto,
  LiveDto,
  SpotPolicyDto,
  WarmupPolicyDto,
  WhatifProgressDto,
  WhatifReportDto,
  WhatifRequestDto,
  WhoAmIDto,
} from "../../src/dashboard/dto.ts";
import { clusterBase, streamPath } from "./paths.ts";

const TOKEN_KEY = "wave.token";

/**
 * The token comes once in the URL fragment (never sent to servers), then lives in the session;
 * the rest of the fragment (a deep link) is kept.
 */
export function takeToken(): string | null {
  const m = /([#?&])token=([^&]+)&?/.exec(location.hash);
  if (m?.[2]) {
    sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(m[2]));
    const rest = location.hash.replace(m[0], m[1] === "&" ? "&" : (m[1] ?? "")).replace(/[?&#]$/, "");
    history.replaceState(null, "", location.pathname + location.search + (rest === "" ? "" : rest));
  }
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(token: string): void {
  sessionStorage.setItem(TOKEN_KEY, token);
}

/**
 * Answers started before the page that wants them exists (early.ts). Each is taken once; one
 * nobody takes within EXPIRE_MS is dropped and its request aborted (an unclaimed event stream
 * must not stay open).
 */
const EXPIRE_MS = 10_000;

interface Early {
  token: string | null;
  res: Promise<Response>;
  ac: AbortController;
  expiry: ReturnType<typeof setTimeout>;
}

const early = new Map<string, Early>();

/** Starts GET `path` now, for whoever asks for the same path with the same token next. */
export function fetchEarly(path: string, token: string | null, headers: Record<string, string> = {}): void {
  const ac = new AbortController();
  const res = fetch(path, {
    headers: { ...headers, ...(token ? { authorization: `Bearer ${token}` } : {}) },
    signal: ac.signal,
  });
  // Failures surface to whoever takes the answer; an untaken one is nobody's error.
  res.catch(() => undefined);
  const expiry = setTimeout(() => {
    if (early.get(path)?.res !== res) return;
    early.delete(path);
    ac.abort();
  }, EXPIRE_MS);
  early.set(path, { token, res, ac, expiry });
}

/**
 * The early answer for `path`, if one was started with the same token (each is taken once).
 * `signal` then aborts it as it would the caller's own request.
 */
export function takeEarly(
  path: string,
  token: string | null,
  signal?: AbortSignal,
): Promise<Response> | undefined {
  const e = early.get(path);
  if (!e || e.token !== token) return undefined;
  early.delete(path);
  clearTimeout(e.expiry);
  if (signal?.aborted) e.ac.abort();
  else signal?.addEventListener("abort", () => e.ac.abort(), { once: true });
  return e.res;
}

export class ApiError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

export async function getJson<T>(path: string, token: string | null, signal?: AbortSignal): Promise<T> {
  const res = await (takeEarly(path, token, signal) ??
    fetch(path, {
      headers: token ? { authorization: `Bearer ${token}` } : {},
      ...(signal ? { signal } : {}),
    }));
  if (!res.ok) {
    const body = (await res.json().catch(() => ({}))) as { message?: string };
    throw new ApiError(res.status, body.message ?? res.statusText);
  }
  return (await res.json()) as T;
}

export async function sendJson<T>(
  method: "PUT" | "DELETE" | "POST",
  path: string,
  token: string | null,
  body?: unknown,
): Promise<T> {
  const res = await fetch(path, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      // Says the change comes from the console (the audit's "via"; a signed-in browser needs it).
      "x-wave-client": "ui",
      ...(body ? { "content-type": "application/json" } : {}),
    },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const out = (await res.json().catch(() => ({}))) as T & { message?: string };
  if (!res.ok) throw new ApiError(res.status, out.message ?? res.statusText);
  return out;
}

export const listClusters = (token: string | null): Promise<ClusterDto[]> =>
  getJson<ClusterDto[]>("api/v1/clusters", token);

export const whoAmI = (token: string | null): Promise<WhoAmIDto> =>
  getJson<WhoAmIDto>("api/v1/whoami", token);

/** How one signs in here (public): OIDC's provider, an auth proxy, or tokens only. */
export const authInfo = (): Promise<AuthInfoDto> => getJson<AuthInfoDto>("auth/info", null);

/**
 * Ends the console sign-in (the server forgets the session) and, when the provider has one, goes
 * on to its sign-out page.
 */
export async function signOut(): Promise<void> {
  sessionStorage.removeItem(TOKEN_KEY);
  const out = await sendJson<{ endSessionUrl: string | null }>("POST", "auth/logout", null).catch(() => ({
    endSessionUrl: null,
  }));
  location.assign(out.endSessionUrl ?? location.pathname);
}

// Policy writes (admin). One place for their paths: each cluster's policies live under its own
// base (api/v1/clusters/<id>), keyed by workload and pool — a policy never reaches another cluster.
const spotPath = (base: string, w: SpotPolicyDto["workload"]): string =>
  `${base}/policies/spot/${w.kind}/${encodeURIComponent(w.namespace)}/${encodeURIComponent(w.name)}`;
const warmupPath = (base: string, pool: string): string =>
  `${base}/policies/warmup/${encodeURIComponent(pool)}`;

// force: take over fields another field manager owns (after a 409 "managed by …: change it in Git").
const forced = (force: boolean): string => (force ? "?force=true" : "");

export const saveSpotPolicy = (
  base: string,
  token: string | null,
  p: SpotPolicyDto,
  force = false,
): Promise<SpotPolicyDto> =>
  sendJson<SpotPolicyDto>("PUT", spotPath(base, p.workload) + forced(force), token, {
    threshold: p.threshold,
    strategy: p.strategy,
    ...(p.percentAboveBase === undefined ? {} : { percentAboveBase: p.percentAboveBase }),
  });
export const deleteSpotPolicy = (
  base: string,
  token: string | null,
  w: SpotPolicyDto["workload"],
): Promise<unknown> => sendJson("DELETE", spotPath(base, w), token);
export const saveWarmupPolicy = (
  base: string,
  token: string | null,
  pool: string,
  policy: WarmupPolicyDto["policy"],
  force = false,
): Promise<WarmupPolicyDto> =>
  sendJson<WarmupPolicyDto>("PUT", warmupPath(base, pool) + forced(force), token, policy);
export const deleteWarmupPolicy = (base: string, token: string | null, pool: string): Promise<unknown> =>
  sendJson("DELETE", warmupPath(base, pool), token);

/** Applies a thrashing NodePool's fix on the embedded simulated cluster (admin; core refuses elsewhere). */
export const applyThrashingFix = (
  base: string,
  token: string | null,
  nodePool: string,
  title: string,
): Promise<{ kubectl: string }> =>
  sendJson<{ kubectl: string }>("POST", `${base}/thrashing/apply`, token, { nodePool, title });

/**
 * Replays the cluster's last 24 h under the candidate (viewer; nothing changes in the cluster),
 * with its progress as server-sent events; aborting `signal` (Cancel, leaving the page) closes the
 * request, which stops the replay in core.
 */
export async function runWhatif(
  base: string,
  token: string | null,
  body: WhatifRequestDto,
  o: { signal?: AbortSignal; onProgress?: (p: WhatifProgressDto) => void } = {},
): Promise<WhatifReportDto> {
  const res = await fetch(`${base}/whatif`, {
    method: "POST",
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      "x-wave-client": "ui",
      "content-type": "application/json",
      accept: "text/event-stream",
    },
    body: JSON.stringify(body),
    ...(o.signal ? { signal: o.signal } : {}),
  });
  if (!res.ok || !res.body || !(res.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    const out = (await res.json().catch(() => ({}))) as WhatifReportDto & { message?: string };
    if (!res.ok) throw new ApiError(res.status, out.message ?? res.statusText);
    return out;
  }
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new ApiError(502, "the what-if stream ended without a result");
    buf += value;
    let at: number;
    while ((at = buf.indexOf("\n\n")) >= 0) {
      const frame = buf.slice(0, at);
      buf = buf.slice(at + 2);
      const event = /^event: (.*)$/m.exec(frame)?.[1];
      const data = /^data: (.*)$/m.exec(frame)?.[1];
      if (!event || !data) continue;
      if (event === "progress") o.onProgress?.(JSON.parse(data) as WhatifProgressDto);
      else if (event === "result") return JSON.parse(data) as WhatifReportDto;
      else if (event === "error") {
        const e = JSON.parse(data) as { statusCode: number; message: string };
        throw new ApiError(e.statusCode, e.message);
      }
    }
  }
}

/**
 * Follows the server-sent-events stream of a cluster, calling `onData` with every snapshot.
 * Reconnects with a capped backoff until `signal` aborts.
 */
export async function followLive(
  clusterId: string,
  token: string | null,
  onData: (live: LiveDto) => void,
  onState: (state: "live" | "reconnecting") => void,
  signal: AbortSignal,
): Promise<void> {
  let delay = 250;
  // A function, so TypeScript does not keep its loop-entry narrowing across awaits.
  const aborted = (): boolean => signal.aborted;
  while (!aborted()) {
    try {
      const path = streamPath(clusterBase(clusterId));
      const res = await (takeEarly(path, token, signal) ??
        fetch(path, {
          headers: { accept: "text/event-stream", ...(token ? { authorization: `Bearer ${token}` } : {}) },
          signal,
        }));
      if (!res.ok || !res.body) throw new ApiError(res.status, res.statusText);
      onState("live");
      delay = 250;
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let idx;
        while ((idx = buf.indexOf("\n\n")) >= 0) {
          const frame = buf.slice(0, idx);
          buf = buf.slice(idx + 2);
          const data = frame
            .split("\n")
            .filter((l) => l.startsWith("data:"))
            .map((l) => l.slice(5).trimStart())
            .join("\n");
          if (data) onData(JSON.parse(data) as LiveDto);
        }
      }
    } catch {
      // Dropped stream or refused connection: fall through to the backoff below.
    }
    if (aborted()) return;
    onState("reconnecting");
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 5000);
  }
}
