// The what-if's progress in the console (issue 29): the panel asks for server-sent events, shows a
// progress bar with the time left while core replays, and Cancel closes the request (core then
// stops the replay's worker).
import { afterEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { within } from "@testing-library/react";
import type { SpotViewDto, WarmupViewDto, WhatifReportDto } from "../../src/dashboard/dto.ts";
import { WhatifPanel } from "../src/pages/Whatif.tsx";
import { WhatifPage } from "../src/pages/WhatifPage.tsx";
import { NOW, ctxFor, mockFetch } from "./helpers.tsx";

afterEach(cleanup);

const side = (costPerHour: number): WhatifReportDto["current"] => ({
  policy: { spot: [], warmup: {} },
  costPerHour,
  costPerMonth: costPerHour * 730,
  spotShare: 0.5,
  nodeHours: { spot: 1, onDemand: 1 },
  podStart: { count: 12, p50Ms: 2000, p95Ms: 61_000, maxMs: 70_000 },
  pendingAtEnd: 0,
  spotInterruptions: 0,
  nodeClaimsCreated: 3,
  now: { costPerHour, nodes: { spot: 2, onDemand: 1 }, pools: {}, workloads: {} },
});
const report: WhatifReportDto = {
  clusterId: "prod",
  from: NOW - 86_400_000,
  to: NOW,
  historyBuckets: 1440,
  catalog: "aws",
  bootDelayMs: 60_000,
  spotInterruptionRate: 0.01,
  workloads: ["shop/Deployment/api"],
  skipped: [],
  current: side(0.5),
  candidate: side(0.62),
  tookMs: 900,
};
const frame = (event: string, data: unknown): string => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

/** A fetch answering with an event stream the test writes to; records the request and its signal. */
function streamingFetch(): {
  write: (text: string) => void;
  end: () => void;
  request: () => { accept: string | null; signal: AbortSignal | undefined } | undefined;
} {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let seen: { accept: string | null; signal: AbortSignal | undefined } | undefined;
  const enc = new TextEncoder();
  globalThis.fetch = (_input: string | URL | Request, init?: RequestInit) => {
    seen = { accept: new Headers(init?.headers).get("accept"), signal: init?.signal ?? undefined };
    const body = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) });
    init?.signal?.addEventListener("abort", () =>
      controller.error(new DOMException("aborted", "AbortError")),
    );
    return Promise.resolve(
      new Response(body, { status: 200, headers: { "content-type": "text/event-stream; charset=utf-8" } }),
    );
  };
  return {
    write: (text) => controller.enqueue(enc.encode(text)),
    end: () => controller.close(),
    request: () => seen,
  };
}

const candidate = {
  spot: [
    {
      workload: { kind: "Deployment" as const, namespace: "shop", name: "api" },
      threshold: 2,
      strategy: "Prefer" as const,
    },
  ],
};

describe("What-if progress", () => {
  it("shows a progress bar with the time left, then the result", async () => {
    const s = streamingFetch();
    render(<WhatifPanel ctx={ctxFor()} candidate={candidate} />);
    fireEvent.click(screen.getByRole("button", { name: /What if/ }));
    await waitFor(() => assert.equal(s.request()?.accept, "text/event-stream"));
    s.write(frame("progress", { state: "queued", position: 1, fraction: 0, elapsedMs: 0, etaMs: 40_000 }));
    await screen.findByText(/Waiting for a replay slot \(1 ahead\) · about 40 s left/);
    s.write(
      frame("progress", { state: "running", position: 0, fraction: 0.42, elapsedMs: 30_000, etaMs: 75_000 }),
    );
    const bar = await screen.findByRole("progressbar", { name: "what-if progress" });
    await waitFor(() => assert.equal(bar.getAttribute("value"), "42"));
    await screen.findByText(/42 % · about 1 min 15 s left/);
    s.write(frame("result", report));
    s.end();
    await screen.findByRole("table", { name: "what-if result" });
    assert.equal(screen.queryByRole("progressbar"), null, "the bar goes with the result");
  });

  it("Cancel closes the request and leaves no error", async () => {
    const s = streamingFetch();
    render(<WhatifPanel ctx={ctxFor()} candidate={candidate} />);
    fireEvent.click(screen.getByRole("button", { name: /What if/ }));
    await waitFor(() => assert.ok(s.request()));
    s.write(
      frame("progress", { state: "running", position: 0, fraction: 0.1, elapsedMs: 1000, etaMs: 9000 }),
    );
    await screen.findByRole("progressbar");
    fireEvent.click(screen.getByRole("button", { name: "Cancel" }));
    assert.equal(s.request()?.signal?.aborted, true, "the request was aborted");
    await waitFor(() => assert.equal(screen.queryByRole("progressbar"), null));
    assert.equal(screen.queryByRole("alert"), null);
    assert.ok(!screen.getByRole<HTMLButtonElement>("button", { name: /What if/ }).disabled);
  });

  it("shows core's refusal (429 with its reason) as an error", async () => {
    globalThis.fetch = () =>
      Promise.resolve(
        new Response(
          JSON.stringify({ error: "too_many_requests", message: "the queue is full; try again in 40 s" }),
          {
            status: 429,
            headers: { "content-type": "application/json", "retry-after": "40" },
          },
        ),
      );
    render(<WhatifPanel ctx={ctxFor()} candidate={candidate} />);
    fireEvent.click(screen.getByRole("button", { name: /What if/ }));
    assert.match((await screen.findByRole("alert")).textContent, /queue is full; try again in 40 s/);
  });
});

describe("the What-if page", () => {
  const HOUR = 3_600_000;
  const timeline = (od: number, spot: number, cost: number) =>
    Array.from({ length: 4 }, (_, i) => ({
      t: NOW - 24 * HOUR + i * 6 * HOUR,
      costPerHour: cost + i / 10,
      onDemandPods: od,
      spotPods: spot,
    }));
  const full: WhatifReportDto = {
    ...report,
    current: { ...side(0.5), timeline: timeline(0, 6, 0.5), podStartHistogram: [10, 2, 0, 0, 1, 0, 0] },
    candidate: { ...side(0.62), timeline: timeline(3, 3, 0.6), podStartHistogram: [11, 2, 0, 0, 0, 0, 0] },
    notes: ["warmup on general: the replay's p95 pod start is worse (61 s → 75 s), not better"],
    recorded: {
      coveredMs: 24 * HOUR,
      costPerHour: 0.52,
      pools: { general: { nodes: 3, costPerHour: 0.52 } },
      fidelity: { costError: -0.0385, poolNodesError: { general: 0 } },
    },
  };
  const spotView = {
    clusterId: "prod",
    at: NOW,
    from: NOW - HOUR,
    to: NOW,
    workloads: [
      {
        workload: { kind: "Deployment", namespace: "shop", name: "api" },
        policy: { threshold: 1, strategy: "Prefer" },
        pods: 6,
        target: null,
        actual: { onDemand: 1, spot: 5, pending: 0 },
        fallbacks: 0,
        costPerHour: 0.5,
      },
    ],
  } as unknown as SpotViewDto;
  const warmView = {
    clusterId: "prod",
    at: NOW,
    from: NOW - HOUR,
    to: NOW,
    pools: [
      {
        nodePool: "general",
        policy: {
          enabled: false,
          maxWarmNodes: 0,
          ttlSeconds: 600,
          cooldownSeconds: 300,
          maxCostPerHour: null,
          prePull: true,
          prePullDeadlineSeconds: 300,
        },
        configured: false,
      },
    ],
  } as unknown as WarmupViewDto;

  it("replays a workload's candidate, shows both sides as charts with the model check, and applies it (admin)", async () => {
    const calls = mockFetch([
      [/GET .*spot-placement/, () => [200, spotView]],
      [/GET .*\/warmup/, () => [200, warmView]],
      [/POST .*clusters\/prod\/whatif$/, () => [200, full]],
      [/PUT .*policies\/spot\/Deployment\/shop\/api$/, (c) => [200, c.body]],
    ]);
    render(<WhatifPage ctx={ctxFor({ role: "admin" })} />);
    const form = screen.getByRole("form", { name: "what-if candidate" });
    await within(form).findByRole("option", { name: "deployment/shop/api" });
    fireEvent.change(within(form).getByLabelText("workload or NodePool"), {
      target: { value: "workload:shop/Deployment/api" },
    });
    assert.equal(within(form).getByLabelText<HTMLInputElement>("on-demand base (threshold)").value, "1");
    fireEvent.change(within(form).getByLabelText("on-demand base (threshold)"), { target: { value: "3" } });
    fireEvent.click(within(form).getByRole("button", { name: "Replay the last 24 h" }));
    await screen.findByTestId("whatif-result");
    assert.deepEqual(calls.find((c) => c.method === "POST")?.body, {
      spot: [
        {
          workload: { kind: "Deployment", namespace: "shop", name: "api" },
          threshold: 3,
          strategy: "Prefer",
        },
      ],
    });
    assert.match(screen.getByRole("note").textContent, /p95 pod start is worse \(61 s → 75 s\)/);
    assert.match(screen.getByTestId("whatif-model-check").textContent, /\$0\.500.*\$0\.520.*-3\.9 %/);
    const cost = screen.getByRole("img", { name: "cost/h over the window" });
    assert.equal(cost.querySelectorAll("polyline").length, 2, "current and candidate");
    assert.match(cost.textContent, /candidate: \$0\.600, \$0\.700/);
    const pods = screen.getByRole("img", { name: "pods on-demand / spot" });
    assert.equal(pods.querySelectorAll("polyline").length, 4);
    const hist = screen.getByRole("table", { name: "pod start latency" });
    assert.deepEqual(
      Array.from(within(hist).getByRole("rowheader", { name: "≤ 2 min" }).parentElement?.children ?? []).map(
        (c) => c.textContent.trim(),
      ),
      ["≤ 2 min", "1", "0"],
    );
    fireEvent.click(within(form).getByRole("button", { name: "Apply the candidate" }));
    await screen.findByText(/spot policy for deployment\/shop\/api saved/);
    const put = calls.find((c) => c.method === "PUT");
    assert.deepEqual(put?.body, { threshold: 3, strategy: "Prefer" });
  });

  it("a viewer's Apply asks for an admin, and a pool's candidate is a warmup policy", async () => {
    const calls = mockFetch([
      [/GET .*spot-placement/, () => [200, spotView]],
      [/GET .*\/warmup/, () => [200, warmView]],
      [/POST .*whatif$/, () => [200, full]],
    ]);
    const ctx = ctxFor({ role: "viewer" });
    render(<WhatifPage ctx={ctx} />);
    const form = screen.getByRole("form", { name: "what-if candidate" });
    await within(form).findByRole("option", { name: "general" });
    fireEvent.change(within(form).getByLabelText("workload or NodePool"), {
      target: { value: "pool:general" },
    });
    fireEvent.change(within(form).getByLabelText("warm nodes"), { target: { value: "2" } });
    fireEvent.click(within(form).getByRole("button", { name: "Replay the last 24 h" }));
    await screen.findByTestId("whatif-result");
    const body = calls.find((c) => c.method === "POST")?.body as {
      warmup: Record<string, { enabled: boolean; maxWarmNodes: number }>;
    };
    assert.deepEqual([body.warmup["general"]?.enabled, body.warmup["general"]?.maxWarmNodes], [true, 2]);
    fireEvent.click(within(form).getByRole("button", { name: "Apply the candidate (admin)" }));
    assert.deepEqual(ctx.asked, ["apply a what-if candidate"]);
    assert.equal(calls.filter((c) => c.method === "PUT").length, 0);
  });
});
