import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
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
