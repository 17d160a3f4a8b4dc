// Requests injected into a built app, for the route tests.
import assert from "node:assert/strict";
import type { FastifyInstance } from "fastify";

/** GET `url` with `headers`: asserts a 200 (naming the URL and the body otherwise), returns its JSON. */
export async function getOk<T>(
  app: FastifyInstance,
  url: string,
  headers: Record<string, string>,
): Promise<T> {
  const r = await app.inject({ url, headers });
  assert.equal(r.statusCode, 200, `${url}: ${r.body}`);
  return r.json<T>();
}
