import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import { MemoryKube } from "../kube/memory/memory.ts";
import { FakeClock } from "../shared/clock.ts";
import { silentLogger } from "../shared/log.ts";
import { ensureNamespaces, registerWebhook } from "./host.ts";

const CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

describe("wave start on a cluster: namespaces and the webhook's registration", () => {
  it("creates the missing namespaces only", async () => {
    const kube = new MemoryKube({ clock: new FakeClock(0) });
    await kube.create("Namespace", { metadata: { name: "wave" } });
    assert.deepEqual(await ensureNamespaces(kube, ["wave", "wave-warmup", "wave"], silentLogger), [
      "wave-warmup",
    ]);
    const labels = (await kube.get("Namespace", "wave-warmup")).metadata.labels;
    assert.equal(labels?.["app.kubernetes.io/managed-by"], "wave");
    assert.deepEqual(await ensureNamespaces(kube, ["wave", "wave-warmup"], silentLogger), []);
  });

  it("writes the configuration for kubectl apply; registers, replaces and removes it on request", async () => {
    const kube = new MemoryKube({ clock: new FakeClock(0) });
    const dataDir = mkdtempSync(join(tmpdir(), "wave-host-"));
    const opts = {
      kube,
      caPem: CA,
      url: "https://127.0.0.1:9443/mutate",
      waveNamespaces: ["wave", "wave-warmup"],
      dataDir,
      log: silentLogger,
    };
    const written = await registerWebhook({ ...opts, register: false });
    assert.equal(written.registered, false);
    const file = parse(readFileSync(written.file, "utf8")) as {
      webhooks: (
        { clientConfig: { url: string; caBundle: string }; namespaceSelector: unknown } | undefined
      )[];
    };
    const [hook] = file.webhooks;
    assert.ok(hook);
    assert.equal(hook.clientConfig.url, opts.url);
    assert.equal(Buffer.from(hook.clientConfig.caBundle, "base64").toString(), CA);
    assert.match(JSON.stringify(hook.namespaceSelector), /wave-warmup/);
    assert.equal((await kube.list("MutatingWebhookConfiguration")).items.length, 0, "not registered");

    const first = await registerWebhook({ ...opts, register: true });
    const again = await registerWebhook({ ...opts, url: "https://127.0.0.1:9444/mutate", register: true });
    const [live] = (await kube.list("MutatingWebhookConfiguration")).items;
    assert.equal(
      (live?.webhooks?.[0]?.clientConfig as { url?: string } | undefined)?.url,
      "https://127.0.0.1:9444/mutate",
      "replaced",
    );
    await again.unregister();
    await first.unregister(); // already gone: no error
    assert.equal((await kube.list("MutatingWebhookConfiguration")).items.length, 0);
  });
});
