// `wave core`'s security defaults (issue #16): mutual TLS unless explicitly waived (then a
// warning), the client-certificate identity bound into the default agent credential, and tokens
// a server accepts at least 16 characters long.
import assert from "node:assert/strict";
import { cpSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { MemoryKube } from "../kube/memory/memory.ts";
import { FakeClock } from "../shared/clock.ts";
import { createLogger } from "../shared/log.ts";
import { makePki } from "../../test/support/pki.ts";
import { suiteDir } from "../../test/support/suite-dir.ts";
import { config, CORE_AGENT_PKI, TOKEN_FLAGS } from "./config.test-helper.ts";
import { agentCredentials, startCoreComponent } from "./core-component.ts";

const tokens = TOKEN_FLAGS;

describe("wave core: security defaults", { timeout: 60_000 }, () => {
  let dir = "";
  suiteDir("wave-core-sec-", (d) => {
    dir = d;
    makePki(dir, CORE_AGENT_PKI);
    // A serving pair without ca.crt: no way to verify agents' certificates.
    mkdirSync(join(dir, "no-ca"));
  });

  it("refuses to start without mutual TLS unless --grpc-allow-no-client-cert, and then warns", async () => {
    cpSync(join(dir, "grpc", "tls.crt"), join(dir, "no-ca", "tls.crt"));
    cpSync(join(dir, "grpc", "tls.key"), join(dir, "no-ca", "tls.key"));
    const kube = new MemoryKube({ clock: new FakeClock() });
    const base = [...tokens, "--grpc-tls-dir", join(dir, "no-ca"), "--port", "0", "--grpc-port", "0"];
    await assert.rejects(
      startCoreComponent(config([...base, "--data-dir", join(dir, "d1")]), {}, { kube }),
      /ca\.crt is missing.*--grpc-allow-no-client-cert/,
    );
    const lines: string[] = [];
    const log = createLogger({ write: (l) => lines.push(l) });
    const core = await startCoreComponent(
      config([...base, "--data-dir", join(dir, "d2"), "--grpc-allow-no-client-cert"]),
      {},
      { kube, log },
    );
    await core.stop();
    assert.ok(
      lines.some((l) => l.includes("mutual TLS is off")),
      lines.join("\n"),
    );
  });

  it("binds the agent token to this cluster id and, with mutual TLS, to the certificate identity", () => {
    const [cred] = agentCredentials(config([...tokens, "--cluster-id", "prod-east"]), true);
    assert.deepEqual(cred?.clusters, ["prod-east"]);
    assert.equal(cred.identity, "wave-agent");
    const [plain] = agentCredentials(config([...tokens, "--agent-identity", "spiffe://x/agent"]), false);
    assert.equal(plain?.identity, undefined);
    assert.equal(
      agentCredentials(config([...tokens, "--agent-identity", "spiffe://x/agent"]), true)[0]?.identity,
      "spiffe://x/agent",
    );
  });

  it("refuses one-character (and other short) tokens", async () => {
    const kube = new MemoryKube({ clock: new FakeClock() });
    await assert.rejects(
      startCoreComponent(
        config(["--agent-token", "a".repeat(20), "--admin-token", "x", "--viewer-token", "c".repeat(20)]),
        {},
        { kube },
      ),
      /admin token: must be at least 16 characters/,
    );
    assert.throws(
      () => agentCredentials(config(["--agent-token", "y"]), true),
      /agent token: must be at least 16/,
    );
  });
});
