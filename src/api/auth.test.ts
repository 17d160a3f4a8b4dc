import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { roleFor, satisfies } from "./auth.ts";

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
  });
});
