// Figures the console shows that must agree with core's: exact counts, labelled scopes.
import { afterEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { cleanup, render, screen, within } from "@testing-library/react";
import type { DisruptionCountsDto, DisruptionDto } from "../../src/dashboard/dto.ts";
import { Disruptions } from "../src/pages/Disruptions.tsx";
import { ctxFor, mockFetch, NOW } from "./helpers.tsx";

afterEach(() => {
  cleanup();
  sessionStorage.clear();
  location.hash = "";
});

describe("Disruptions page counts", () => {
  it("counts every disruption in range from core's count, not from the 1,000-row list", async () => {
    const list: DisruptionDto[] = Array.from({ length: 1000 }, (_, i) => ({
      at: NOW - 1000 - i * 1000,
      nodeClaim: `nc-${i}`,
      nodePool: "batch",
      reason: i % 2 === 0 ? "Underutilized" : "Empty",
    }));
    const counts: DisruptionCountsDto = {
      from: NOW - 24 * 3_600_000,
      to: NOW,
      total: 1485,
      counts: [
        { nodePool: "batch", reason: "Empty", count: 700 },
        { nodePool: "batch", reason: "Underutilized", count: 785 },
      ],
    };
    const calls = mockFetch([
      [/disruptions\/counts\?/, () => [200, counts]],
      [/disruptions\?/, () => [200, list]],
      [/events\?/, () => [200, []]],
    ]);
    render(<Disruptions ctx={ctxFor({ route: { ...ctxFor().route, page: "disruptions" } })} />);
    const panel = await screen.findByTestId("disruption-counts");
    await within(panel).findByText("(1,485)");
    const row = within(panel).getByTestId("count-row");
    assert.deepEqual(
      [...row.querySelectorAll("td")].map((td) => td.textContent),
      ["batch", "700", "785", "1,485"],
    );
    assert.match(
      (await screen.findByTestId("disruption-list-paged")).textContent,
      /newest 1,000 of 1,485 disruptions/,
    );
    assert.ok(calls.some((c) => /\/disruptions\/counts\?from=/.test(c.url)));
  });
});
