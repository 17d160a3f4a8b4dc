// Crash safety of the SQLite store: a writer process is SIGKILLed (no close, no shutdown) while
// it commits batches, or in the middle of one; after reopening, everything committed is there,
// nothing of the torn batch is, the checkpoint agrees with the rows, and the file is intact.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { DatabaseSync } from "node:sqlite";
import { batch, EVENTS_PER_BATCH, POINTS_PER_BATCH } from "./sqlite-crash.child.ts";
import { openSqliteStore } from "./sqlite.ts";

const child = join(import.meta.dirname, "sqlite-crash.child.ts");
const T0 = Date.UTC(2026, 0, 1);

/** Runs the child until `stopWhen` accepts a line, then SIGKILLs it; returns the last acked seq. */
async function runAndKill(
  path: string,
  args: string[],
  stopWhen: (line: string) => boolean,
): Promise<number> {
  const proc = spawn(process.execPath, [child, path, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  proc.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => proc.on("exit", () => resolve()));
  let acked = 0;
  let stopped = false;
  for await (const line of createInterface({ input: proc.stdout })) {
    const m = /^acked (\d+)$/.exec(line);
    if (m) acked = Number(m[1]);
    if (stopWhen(line)) {
      proc.kill("SIGKILL");
      stopped = true;
      break;
    }
  }
  await exited;
  assert.ok(stopped, `child ended before it was killed: ${stderr}`);
  assert.equal(proc.signalCode, "SIGKILL");
  return acked;
}

function integrity(path: string): string {
  const db = new DatabaseSync(path);
  try {
    const row = db.prepare("PRAGMA integrity_check").get() as { integrity_check: string };
    return row.integrity_check;
  } finally {
    db.close();
  }
}

async function counts(path: string): Promise<{ checkpoint: number; events: number; points: number }> {
  const { store } = await openSqliteStore({ path });
  try {
    const range = { clusterId: "c1", from: T0, to: T0 + 30 * 86_400_000 };
    const events = (await store.lifecycle({ ...range, limit: 1_000_000 })).length;
    const points = (await store.series({ ...range, stepMs: 60_000 })).filter(
      (r) => r.kind === "point",
    ).length;
    return { checkpoint: (await store.checkpoint("c1"))?.sequence ?? 0, events, points };
  } finally {
    await store.close();
  }
}

describe("SQLite crash safety", () => {
  it("loses nothing acked when killed while committing batches, and rows match the checkpoint", async () => {
    const dir = mkdtempSync(join(tmpdir(), "wave-crash-"));
    try {
      const path = join(dir, "wave.db");
      const acked = await runAndKill(path, ["loop"], (l) => l === "acked 40");
      assert.equal(integrity(path), "ok");
      const c = await counts(path);
      // The child may have committed a batch or two after its last line reached us, never fewer.
      assert.ok(c.checkpoint >= acked, `checkpoint ${c.checkpoint} < acked ${acked}`);
      assert.equal(c.events, c.checkpoint * EVENTS_PER_BATCH);
      assert.equal(c.points, c.checkpoint * POINTS_PER_BATCH);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("keeps nothing of a batch torn mid-transaction, and the store is writable again", async () => {
    const dir = mkdtempSync(join(tmpdir(), "wave-crash-"));
    try {
      const path = join(dir, "wave.db");
      const acked = await runAndKill(path, ["torn", "5"], (l) => l === "mid-batch");
      assert.equal(acked, 5);
      assert.equal(integrity(path), "ok");
      assert.deepEqual(await counts(path), {
        checkpoint: 5,
        events: 5 * EVENTS_PER_BATCH,
        points: 5 * POINTS_PER_BATCH,
      });
      // Core restarts, the agent resends from the checkpoint: batch 6 and a duplicate of 5.
      const { store } = await openSqliteStore({ path });
      const again = await store.write(batch(5));
      assert.deepEqual([again.lifecycle, again.series], [0, 0]);
      const next = await store.write(batch(6));
      assert.deepEqual(
        [next.lifecycle, next.series, next.checkpoint?.sequence],
        [EVENTS_PER_BATCH, POINTS_PER_BATCH, 6],
      );
      await store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
