// Shared by the component tests: a page context and a fetch that answers from a route table.
import type { ClusterDto } from "../../src/dashboard/dto.ts";
import type { PageCtx } from "../src/ctx.ts";
import { DEFAULT_RANGE } from "../src/range.ts";

export const NOW = Date.parse("2026-03-02T12:00:00Z");

export const cluster: ClusterDto = {
  id: "prod",
  simulated: false,
  connected: true,
  lastSeen: NOW,
  catchingUp: null,
  kubernetesVersion: "v1.34.1",
  karpenterVersion: "v1.8.2",
  karpenterSupport: { status: "tested", oldestTested: "v1.6.4", newestTested: "v1.15.0", warning: null },
  agentVersion: "0.1.0",
  rejected: null,
};

export function ctxFor(
  over: Partial<PageCtx> = {},
): PageCtx & { asked: string[]; went: Partial<PageCtx["route"]>[] } {
  const asked: string[] = [];
  const went: Partial<PageCtx["route"]>[] = [];
  return {
    clusterId: cluster.id,
    cluster,
    base: "api/v1/clusters/prod",
    token: "t",
    role: "viewer",
    version: 0,
    live: undefined,
    now: NOW,
    route: { page: "overview", cluster: "prod", range: DEFAULT_RANGE, node: undefined, params: {} },
    go: (p) => went.push(p),
    askAdmin: (why) => asked.push(why),
    refresh: () => undefined,
    ...over,
    asked,
    went,
  };
}

export interface Call {
  method: string;
  url: string;
  body: unknown;
}

/** Replaces fetch: the first route whose pattern matches the URL answers (status, JSON body). */
export function mockFetch(routes: [RegExp, (c: Call) => [number, unknown]][]): Call[] {
  const calls: Call[] = [];
  globalThis.fetch = (input: string | URL | Request, init?: RequestInit) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    const call: Call = {
      method: init?.method ?? "GET",
      url,
      body: typeof init?.body === "string" ? (JSON.parse(init.body) as unknown) : undefined,
    };
    calls.push(call);
    const hit = routes.find(([re]) => re.test(`${call.method} ${url}`));
    if (!hit)
      return Promise.resolve(
        new Response(JSON.stringify({ message: `no mock for ${url}` }), { status: 404 }),
      );
    const [status, body] = hit[1](call);
    return Promise.resolve(new Response(status === 204 ? null : JSON.stringify(body), { status }));
  };
  return calls;
}
