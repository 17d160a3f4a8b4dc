import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ConfigError } from "../config/config.ts";
import { RefusedError, UnreachableError, UsageError, coreAnswerError, exitCode } from "./errors.ts";
import { run, type Io } from "./main.ts";

const bin = fileURLToPath(new URL("../../bin/wave.ts", import.meta.url));

function capture(env: NodeJS.ProcessEnv = {}): Io & { stdout: string[]; stderr: string[] } {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return {
    stdout,
    stderr,
    out: (t) => stdout.push(t),
    err: (t) => stderr.push(t),
    env,
    signal: new AbortController().signal,
  };
}

describe("wave CLI", () => {
  it("prints help and version", async () => {
    const io = capture();
    assert.equal(await run(["--help"], io), 0);
    assert.match(io.stdout.join(""), /Usage: wave <command>/);
    const io2 = capture();
    assert.equal(await run(["version"], io2), 0);
    assert.match(io2.stdout.join(""), /^wave \d+\.\d+\.\d+ \(node v/);
  });

  it("documents its exit codes in --help", async () => {
    const io = capture();
    assert.equal(await run(["--help"], io), 0);
    const text = io.stdout.join("");
    for (const line of [
      /^ {2}0 {2}ok$/m,
      /^ {2}1 {2}error/m,
      /^ {2}2 {2}usage/m,
      /^ {2}3 {2}core unreachable/m,
    ])
      assert.match(text, line);
    assert.match(text, /^ {2}4 {2}refused or not found \(core answered 401, 403, 404 or 409/m);
  });

  it("maps every failure to one exit code", () => {
    assert.equal(exitCode(new UsageError("x")), 2);
    assert.equal(exitCode(new ConfigError("x")), 2);
    assert.equal(exitCode(new UnreachableError("x")), 3);
    assert.equal(exitCode(new RefusedError("x")), 4);
    assert.equal(exitCode(new Error("x")), 1);
    for (const s of [401, 403, 404, 409]) assert.equal(exitCode(coreAnswerError(s, "no")), 4, String(s));
    assert.equal(exitCode(coreAnswerError(400, "bad")), 2);
    assert.equal(exitCode(coreAnswerError(500, "boom")), 1);
    assert.equal(exitCode(coreAnswerError(503, "busy")), 1);
  });

  it("each command's --help shows its own flags only, --cluster-id once", async () => {
    const help = async (...argv: string[]): Promise<string> => {
      const io = capture();
      assert.equal(await run([...argv, "--help"], io), 0);
      return io.stdout.join("");
    };
    const count = (text: string, flag: string): number => text.split(`--${flag} `).length - 1;
    const all = await help("start");
    assert.ok(count(all, "grpc-tls-dir") === 1 && count(all, "pricing-source") === 1);
    for (const name of ["spot", "warmup", "whatif"]) {
      const text = await help(name);
      assert.equal(count(text, "cluster-id"), 1, `${name}: --cluster-id once`);
      assert.equal(count(text, "admin-token"), 1, name);
      for (const other of [
        "grpc-tls-dir",
        "pricing-source",
        "webhook-fallback",
        "agent-token",
        "database-url",
      ])
        assert.equal(count(text, other), 0, `${name} --help lists --${other}`);
      assert.ok(text.split("\n").length < 45, `${name} --help: ${text.split("\n").length} lines`);
    }
    const agent = await help("agent");
    assert.equal(count(agent, "core-address"), 2); // its usage line and its row
    for (const other of ["admin-token", "webhook-fallback", "pricing-source", "grpc-tls-dir"])
      assert.equal(count(agent, other), 0, `agent --help lists --${other}`);
    const webhook = await help("webhook");
    assert.equal(count(webhook, "webhook-fallback"), 1);
    for (const other of ["admin-token", "agent-token", "core-address", "pricing-source"])
      assert.equal(count(webhook, other), 0, `webhook --help lists --${other}`);
    const cleanup = await help("cleanup");
    assert.equal(count(cleanup, "wait-for-pods"), 2); // its usage line and its row
    assert.equal(count(cleanup, "admin-token"), 0);
  });

  it("--help describes policies as resources and warmup in the agent (issue 44: no drift)", async () => {
    const help = async (...argv: string[]): Promise<string> => {
      const io = capture();
      assert.equal(await run([...argv, "--help"], io), 0);
      return io.stdout.join("");
    };
    const top = await help();
    const line = (name: string): string => top.split("\n").find((l) => l.startsWith(`  ${name} `)) ?? "";
    assert.match(line("agent"), /warmup controller/);
    assert.doesNotMatch(line("core"), /warmup/, "warmup runs in the agent (ADR 0014)");
    assert.match(line("spot"), /SpotPolicy resources/);
    assert.match(line("warmup"), /WarmupPolicy resources/);
    assert.doesNotMatch(line("webhook"), /pulled from core/);
    const webhook = await help("webhook");
    assert.match(webhook, /--spot-policy-source /, "the webhook reads it");
    assert.doesNotMatch(webhook.split("\n").find((l) => l.startsWith("Usage:")) ?? "", /spot-policies-url/);
    assert.match(await help("agent"), /--warmup-policy-source /, "the agent reads it");
  });

  it("prints a bash completion that completes commands, verbs and each command's flags", async () => {
    const io = capture();
    assert.equal(await run(["completion", "bash"], io), 0);
    const script = join(mkdtempSync(join(tmpdir(), "wave-completion-")), "wave.bash");
    writeFileSync(script, io.stdout.join(""));
    const complete = (...words: string[]): string[] => {
      const r = spawnSync(
        "bash",
        [
          "-c",
          `source '${script}'; COMP_WORDS=(${words.map((w) => `'${w}'`).join(" ")}); COMP_CWORD=${words.length - 1}; _wave; printf '%s\\n' "\${COMPREPLY[@]}"`,
        ],
        { encoding: "utf8" },
      );
      assert.equal(r.status, 0, r.stderr);
      return r.stdout.split("\n").filter((l) => l !== "");
    };
    assert.deepEqual(complete("wave", "sp"), ["spot"]);
    assert.deepEqual(complete("wave", "warmup", "l"), ["list"]);
    assert.deepEqual(complete("wave", "spot", "set", "x", "--thr"), ["--threshold"]);
    assert.deepEqual(complete("wave", "spot", "--cluster"), ["--cluster-id"]);
    assert.deepEqual(complete("wave", "spot", "--grpc"), [], "spot completes only its own flags");
    const fish = capture();
    assert.equal(await run(["completion", "fish"], fish), 2);
  });

  it("rejects an unknown command with exit 2 and one line", async () => {
    const io = capture();
    assert.equal(await run(["frobnicate"], io), 2);
    assert.deepEqual(io.stderr, ['wave: unknown command "frobnicate" (see wave --help)\n']);
  });

  it("as a process: bad input → one line on stderr, exit 2, no stack", () => {
    const r = spawnSync(process.execPath, [bin, "frobnicate", "--port", "99999"], { encoding: "utf8" });
    assert.equal(r.status, 2);
    assert.equal(r.stderr.trim().split("\n").length, 1);
    assert.doesNotMatch(r.stderr, /\n\s+at /);
  });

  it("as a process: runs on Node 24", () => {
    const r = spawnSync(process.execPath, [bin, "version"], { encoding: "utf8" });
    assert.equal(r.status, 0);
    assert.match(r.stdout, /\(node v24\./);
  });
});

/** The modules a `wave …` process loads (resolved URLs, via a module hook printed on exit). */
function loadedModules(args: string[]): { status: number | null; stderr: string; urls: string[] } {
  const hook = [
    'import { registerHooks } from "node:module";',
    "const seen = new Set();",
    "registerHooks({ resolve(s, c, next) { const r = next(s, c); seen.add(r.url); return r; } });",
    'process.on("exit", () => process.stderr.write("\\nLOADED " + JSON.stringify([...seen]) + "\\n"));',
  ].join("\n");
  const r = spawnSync(
    process.execPath,
    ["--import", `data:text/javascript,${encodeURIComponent(hook)}`, bin, ...args],
    { encoding: "utf8", env: { PATH: process.env.PATH ?? "" }, maxBuffer: 64 << 20 },
  );
  const line = /\nLOADED (.*)\n/.exec(r.stderr);
  assert.ok(line?.[1], `no module list in stderr: ${r.stderr.slice(0, 2000)}`);
  return {
    status: r.status,
    stderr: r.stderr.slice(0, line.index),
    urls: JSON.parse(line[1]) as string[],
  };
}

describe("wave CLI loads only the running command's modules", () => {
  const loads = (urls: string[], part: string): boolean => urls.some((u) => u.includes(part));

  it("--help loads no component", () => {
    const r = loadedModules(["--help"]);
    assert.equal(r.status, 0);
    for (const part of ["/src/core/", "/src/agent/", "/src/sim/", "@kubernetes/client-node", "fastify"])
      assert.ok(!loads(r.urls, part), `wave --help loaded ${part}`);
  });

  it("agent: no core, API, simulator or AWS SDK", () => {
    // Without a core address the agent stops at its first check, after its module loaded.
    const r = loadedModules(["agent"]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /core address .* is required/);
    assert.ok(loads(r.urls, "/src/cli/agent-component.ts"));
    for (const part of ["/src/core/", "/src/api/", "/src/sim/", "fastify", "@aws-sdk", "/node_modules/pg/"])
      assert.ok(!loads(r.urls, part), `wave agent loaded ${part}`);
  });

  it("core: no agent (beyond the shared wire format), simulator or AWS SDK", () => {
    const r = loadedModules(["core"]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /agent token .* is required/);
    assert.ok(loads(r.urls, "/src/cli/core-component.ts"));
    for (const part of ["/src/agent/agent.ts", "/src/agent/informer-source.ts", "/src/sim/", "@aws-sdk"])
      assert.ok(!loads(r.urls, part), `wave core loaded ${part}`);
  });
});
