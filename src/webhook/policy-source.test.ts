import assert from "node:assert/strict";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { policySet, webInput } from "../policy/spot.test-helper.ts";
import { FakeClock } from "../shared/clock.ts";
import { PolicyValidationError } from "../policy/validate-spot.ts";
import { InMemoryPolicySource, PullPolicySource } from "./policy-source.ts";
import { resolveWorkload } from "./workload.ts";
import { fixturePod } from "./test-helpers.ts";

const web = webInput;
const set = policySet;

describe("resolveWorkload", () => {
  it("strips the pod-template-hash suffix to find the Deployment, then tries the ReplicaSet", () => {
    assert.deepEqual(resolveWorkload(fixturePod("deployment-pod-generatename"), "shop"), {
      managed: true,
      candidates: [
        { namespace: "shop", kind: "Deployment", name: "web" },
        { namespace: "shop", kind: "ReplicaSet", name: "web-5bd499bc46" },
      ],
    });
  });

  it("treats a ReplicaSet without the hash as bare, and ignores Jobs and bare pods", () => {
    const pod = fixturePod("deployment-pod-generatename");
    delete pod.metadata.labels?.["pod-template-hash"];
    assert.deepEqual(resolveWorkload(pod, "shop"), {
      managed: true,
      candidates: [{ namespace: "shop", kind: "ReplicaSet", name: "web-5bd499bc46" }],
    });
    assert.equal(resolveWorkload(fixturePod("job-pod"), "shop").managed, false);
    const bare = fixturePod("deployment-pod-generatename");
    bare.metadata.ownerReferences = [];
    assert.equal(resolveWorkload(bare, "shop").managed, false);
  });
});

describe("policy sources", () => {
  it("in-memory: a bad push throws and the old set stays in force", () => {
    const src = new InMemoryPolicySource();
    src.set(set([web], "7"));
    assert.throws(() => src.set(set([{ ...web, threshold: "x" }], "8")), PolicyValidationError);
    assert.equal(src.revision, "7");
    assert.equal(src.lookup(web.workload as never)?.threshold, 2);
  });

  it("file pull: keeps serving the last good set when the file breaks, picks up fixes", async () => {
    const dir = await mkdtemp(join(tmpdir(), "wave-pol-"));
    const file = join(dir, "policies.json");
    await writeFile(file, JSON.stringify(set([web], "1")));
    const src = PullPolicySource.fromFile(file, { clock: new FakeClock() });
    assert.equal(await src.refresh(), true);
    assert.equal(src.revision, "1");
    await writeFile(file, "{ not json");
    assert.equal(await src.refresh(), false);
    assert.match(src.lastError ?? "", /not valid JSON/);
    assert.equal(src.lookup(web.workload as never)?.threshold, 2);
    await writeFile(file, JSON.stringify(set([{ ...web, threshold: 5 }], "2")));
    assert.equal(await src.refresh(), true);
    assert.equal(src.lookup(web.workload as never)?.threshold, 5);
  });

  it("polls every interval until stopped", async () => {
    const clock = new FakeClock();
    const answers = [JSON.stringify(set([web], "1")), "garbage", JSON.stringify(set([web], "3"))];
    let pulls = 0;
    // An in-memory loader resolves within the microtask flushes FakeClock.advance performs.
    const src = new PullPolicySource({
      origin: "test",
      clock,
      intervalMs: 1000,
      load: () => Promise.resolve(answers[pulls++] ?? ""),
    });
    assert.equal(await src.start(), true);
    await clock.advance(1000);
    assert.equal(pulls, 2);
    assert.equal(src.revision, "1", "bad pull keeps the last set");
    await clock.advance(1000);
    assert.equal(pulls, 3);
    assert.equal(src.revision, "3");
    await src.stop();
    await clock.advance(5000);
    assert.equal(pulls, 3, "no pulls after stop");
  });

  it("HTTP pull: non-2xx and network errors keep the last set", async () => {
    const { createServer } = await import("node:http");
    let body = JSON.stringify(set([web], "1"));
    let status = 200;
    const server = createServer((_req, res) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(body);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as { port: number }).port;
    const src = PullPolicySource.fromUrl(`http://127.0.0.1:${port}/api/v1/spot-policies`, {
      clock: new FakeClock(),
    });
    try {
      assert.equal(await src.refresh(), true);
      status = 503;
      body = "down";
      assert.equal(await src.refresh(), false);
      assert.match(src.lastError ?? "", /HTTP 503/);
      assert.equal(src.revision, "1");
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
