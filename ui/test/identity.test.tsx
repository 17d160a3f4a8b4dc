// The console's identity (issue 31): "Sign in with <provider>" when OIDC is configured, who is
// signed in and their role, sign out, and the audit list.
import { afterEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { cleanup, render, screen, within } from "@testing-library/react";
import type { AuditEntryDto } from "../../src/dashboard/dto.ts";
import { App } from "../src/App.tsx";
import { Audit } from "../src/pages/Audit.tsx";
import { cluster, ctxFor, mockFetch, NOW } from "./helpers.tsx";

afterEach(() => {
  cleanup();
  sessionStorage.clear();
  location.hash = "";
});

describe("console sign-in", () => {
  it("offers the OIDC provider when the API wants a sign-in", async () => {
    mockFetch([
      [/auth\/info$/, () => [200, { oidc: { provider: "Keycloak", loginPath: "auth/login" }, proxy: false }]],
      [/api\/v1\//, () => [401, { message: "a valid bearer token or sign-in is required" }]],
    ]);
    render(<App />);
    const link = await screen.findByRole("link", { name: "Sign in with Keycloak" });
    assert.equal(link.getAttribute("href"), "auth/login");
    // The tokens stay as the other way in.
    assert.ok(screen.getByLabelText("token"));
  });

  it("shows only the token form without OIDC", async () => {
    mockFetch([
      [/auth\/info$/, () => [200, { oidc: null, proxy: false }]],
      [/api\/v1\//, () => [401, { message: "no" }]],
    ]);
    render(<App />);
    await screen.findByLabelText("token");
    assert.equal(screen.queryByTestId("oidc-sign-in"), null);
  });

  it("says a token in the link was rejected, and where the current one is (issue 43)", async () => {
    mockFetch([
      [/auth\/info$/, () => [200, { oidc: null, proxy: false }]],
      [/api\/v1\//, () => [401, { message: "a valid bearer token or sign-in is required" }]],
    ]);
    location.hash = "#/overview?cluster=default&token=stale-token-from-yesterday";
    render(<App />);
    const said = await screen.findByTestId("token-rejected");
    assert.match(said.textContent, /token in this link was rejected/);
    assert.match(said.textContent, /wave start --rotate-tokens/);
    assert.match(said.textContent, /tokens\.json/);
    assert.ok(screen.getByLabelText("token"), "and a way in");
  });

  it("asks for a token without calling it rejected when none was given", async () => {
    mockFetch([
      [/auth\/info$/, () => [200, { oidc: null, proxy: false }]],
      [/api\/v1\//, () => [401, { message: "no" }]],
    ]);
    render(<App />);
    await screen.findByLabelText("token");
    assert.equal(screen.queryByTestId("token-rejected"), null);
  });

  it("shows who is signed in, their role, and a sign-out", async () => {
    mockFetch([
      [
        /api\/v1\/whoami$/,
        () => [
          200,
          {
            role: "namespace-editor",
            subject: "nina@example.com",
            groups: ["team-a"],
            namespaces: ["team-a"],
            source: "oidc",
          },
        ],
      ],
      [/api\/v1\/clusters$/, () => [200, [cluster]]],
      [/\/audit/, () => [200, { entries: [], elsewhere: [] }]],
      [/./, () => [200, {}]],
    ]);
    location.hash = "#/audit?cluster=prod";
    render(<App />);
    assert.equal((await screen.findByTestId("who")).textContent, "nina@example.com");
    assert.equal(screen.getByTestId("role").textContent, "namespace editor: team-a");
    assert.ok(screen.getByTestId("sign-out"));
  });
});

describe("audit page", () => {
  it("lists who changed what, when and from where, and changes made elsewhere by field manager", async () => {
    const entry: AuditEntryDto = {
      id: 7,
      at: NOW,
      subject: "alice@example.com",
      groups: ["wave-admins"],
      source: "oidc",
      via: "ui",
      address: "10.0.0.7",
      action: "spot-policy.put",
      object: "SpotPolicy shop/Deployment/web",
      before: null,
      after: '{"threshold":2}',
    };
    const elsewhere = {
      at: NOW - 60_000,
      kind: "SpotPolicy",
      name: "shop/db",
      manager: "argocd-controller",
      deleted: false,
      spec: '{"threshold":1}',
    };
    const calls = mockFetch([[/\/audit/, () => [200, { entries: [entry], elsewhere: [elsewhere] }]]]);
    render(<Audit ctx={ctxFor()} />);
    const row = await screen.findByTestId("audit-row");
    assert.match(row.textContent, /2026-03-02 12:00:00 UTC/);
    assert.match(row.textContent, /alice@example\.com \(wave-admins\)/);
    assert.match(row.textContent, /spot-policy\.put/);
    assert.match(row.textContent, /SpotPolicy shop\/Deployment\/web/);
    assert.match(row.textContent, /— → \{"threshold":2\}/);
    assert.equal(calls[0]?.url, "api/v1/clusters/prod/audit?limit=200");
    // Changes made elsewhere show their field manager.
    const foreign = screen.getByTestId("foreign-row");
    assert.equal(within(foreign).getByTestId("foreign-manager").textContent, "argocd-controller");
    assert.match(foreign.textContent, /SpotPolicy shop\/db/);
  });
});
