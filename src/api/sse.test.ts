import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { build } from "./app.ts";
import { openSse, sseFrame, sseFrameJson } from "./sse.ts";

describe("sse", () => {
  it("frames multi-line data and ids", () => {
    assert.equal(sseFrame("snapshot", { a: 1 }, 3), 'id: 3\nevent: snapshot\ndata: {"a":1}\n\n');
    assert.equal(sseFrame("x", "a\nb"), 'event: x\ndata: "a\\nb"\n\n');
  });

  it("frames pre-serialized JSON exactly as it frames the data", () => {
    for (const data of [{ a: 1, s: "line\nbreak\r\u2028" }, [1, "x"], "plain", null]) {
      assert.equal(sseFrameJson("snapshot", JSON.stringify(data), 7), sseFrame("snapshot", data, 7));
      assert.equal(sseFrameJson("x", JSON.stringify(data)), sseFrame("x", data));
    }
  });

  it("streams events to a real client and cleans up when it leaves", async () => {
    const bus = new EventEmitter();
    let cleaned = false;
    const isCleaned = (): boolean => cleaned;
    const app = await build({
      tokens: { viewer: "v" },
      plugins: [
        (s) => {
          s.get("/stream", { config: { role: "viewer" } }, (req, reply) => {
            openSse(req, reply, (stream) => {
              const on = (n: number) => stream.send("tick", { n });
              bus.on("tick", on);
              return () => {
                bus.off("tick", on);
                cleaned = true;
              };
            });
          });
        },
      ],
    });
    const url = await app.listen({ port: 0, host: "127.0.0.1" });
    try {
      const ac = new AbortController();
      const res = await fetch(`${url}/stream`, { headers: { authorization: "Bearer v" }, signal: ac.signal });
      assert.equal(res.headers.get("content-type"), "text/event-stream; charset=utf-8");
      const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
      let text = "";
      bus.emit("tick", 1);
      while (!text.includes('"n":1')) text += (await reader.read()).value ?? "";
      assert.match(text, /event: tick\ndata: \{"n":1\}/);
      ac.abort();
      await reader.cancel().catch(() => undefined);
      // The server sees the disconnect asynchronously; give it a bounded number of turns.
      for (let i = 0; i < 100 && !isCleaned(); i++) await new Promise((r) => setTimeout(r, 5));
      assert.ok(isCleaned(), "listener removed after disconnect");
      assert.equal(bus.listenerCount("tick"), 0);
    } finally {
      await app.close();
    }
  });

  it("rejects an unauthenticated stream", async () => {
    const app = await build({
      tokens: { viewer: "v" },
      plugins: [(s) => void s.get("/stream", { config: { role: "viewer" } }, () => ({}))],
    });
    assert.equal((await app.inject({ url: "/stream" })).statusCode, 401);
  });
});
