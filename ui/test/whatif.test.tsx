// The what-if's progress in the console (issue 29): the panel asks for server-sent events, shows a
// progress bar with the time left while core replays, and Cancel closes the request (core then
// stops the replay's worker).
import { afterEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import type { WhatifReportDto } from "../../src/dashboard/dto.ts";
import { WhatifPanel } from "../src/pages/Whatif.tsx";
import { NOW, ctxFor } from "./helpers.tsx";

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
