import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { newToken, roleFor } from "./auth.ts";
import { satisfies } from "./identity.ts";
import { parseConfig, serverToken } from "../config/config.ts";

describe("roleFor", () => {
  const tokens = { admin: "adm-123", viewer: "view-456" };
  it("maps tokens to roles", () => {
    assert.equal(roleFor("Bearer adm-123", tokens), "admin");
    assert.equal(roleFor("bearer view-456", tokens), "viewer");
  });
  it("grants nothing for missing, malformed or wrong tokens", () => {
    for (const h of [undefined, "", "Basic adm-123", "Bearer", "Bearer adm-12", "Bearer adm-123 x"])
      assert.equal(roleFor(h, tokens), undefined, String(h));
  });
  it("admin satisfies viewer, not the reverse", () => {
    assert.ok(satisfies("admin", "viewer"));
    assert.ok(satisfies("admin", "admin"));
    assert.ok(!satisfies("viewer", "admin"));
    assert.ok(satisfies("namespace-editor", "viewer"));
    assert.ok(!satisfies("namespace-editor", "admin"));
    assert.ok(!satisfies("viewer", "namespace-editor"));
  });
});

describe("newToken", () => {
  it("always passes as a flag's value and as a server token", () => {
    // base64url tokens began with "-" one time in 64 and `--viewer-token -x…` then failed to parse.
    const seen = new Set<string>();
    for (let i = 0; i < 2_000; i++) {
      const t = newToken();
      seen.add(t);
      assert.equal(parseConfig(["--viewer-token", t], {}).config.viewerToken, t);
      assert.equal(serverToken(t, "token"), t);
    }
    assert.equal(seen.size, 2_000, "tokens are random");
  });
});
