import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { build } from "./app.ts";

const tokens = { admin: "a-token", viewer: "v-token" };

async function app() {
  return build({
    tokens,
    plugins: [
      (s) => {
        s.get("/api/v1/read", { config: { role: "viewer" } }, () => ({ read: true }));
        s.put(
          "/api/v1/write",
          {
            config: { role: "admin" },
            schema: {
              body: {
                type: "object",
                required: ["n"],
                additionalProperties: false,
                properties: { n: { type: "integer", minimum: 0 } },
              },
            },
          },
          (req) => ({ got: req.body }),
        );
      },
    ],
  });
}

describe("api app", () => {
  it("requires a token on protected routes", async () => {
    const a = await app();
    const r = await a.inject({ url: "/api/v1/read" });
    assert.equal(r.statusCode, 401);
    assert.equal(r.headers["www-authenticate"], 'Bearer realm="wave"');
    assert.equal(
      (await a.inject({ url: "/api/v1/read", headers: { authorization: "Bearer v-token" } })).statusCode,
      200,
    );
  });

  it("keeps writes for admins", async () => {
    const a = await app();
    const put = (token: string) =>
      a.inject({
        method: "PUT",
        url: "/api/v1/write",
        headers: { authorization: `Bearer ${token}` },
        payload: { n: 1 },
      });
    assert.equal((await put("v-token")).statusCode, 403);
    const ok = await put("a-token");
    assert.equal(ok.statusCode, 200);
    assert.deepEqual(ok.json(), { got: { n: 1 } });
  });

  it("answers malformed bodies with 400 and a clear message", async () => {
    const a = await app();
    const headers = { authorization: "Bearer a-token", "content-type": "application/json" };
    const bad = await a.inject({ method: "PUT", url: "/api/v1/write", headers, payload: "{not json" });
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json<{ error: string }>().error, "bad_request");
    const invalid = await a.inject({ method: "PUT", url: "/api/v1/write", headers, payload: { n: -1 } });
    assert.equal(invalid.statusCode, 400);
    assert.match(invalid.json<{ message: string }>().message, /n must be >= 0/);
  });

  it("serves health without auth and the OpenAPI document to viewers", async () => {
    const a = await app();
    assert.equal((await a.inject({ url: "/healthz" })).statusCode, 200);
    const doc = (
      await a.inject({ url: "/openapi.json", headers: { authorization: "Bearer v-token" } })
    ).json<{
      openapi: string;
      paths: Record<string, unknown>;
    }>();
    assert.equal(doc.openapi, "3.1.0");
    assert.ok("/api/v1/write" in doc.paths);
    assert.equal((await a.inject({ url: "/nope" })).statusCode, 404);
  });
});
