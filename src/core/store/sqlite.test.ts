import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../../shared/log.ts";
import { storeContract } from "./contract.ts";
import { openStore } from "./open.ts";
import { migrationContract } from "./migrations.contract.ts";
import { openSqliteStore, SqliteDriver } from "./sqlite.ts";

storeContract("sqlite", () => {
  const dir = mkdtempSync(join(tmpdir(), "wave-sqlite-"));
  const path = join(dir, "wave.db");
  return Promise.resolve({
    open: (retention) => openSqliteStore({ path, ...(retention ? { retention } : {}) }),
    dispose: () => {
      rmSync(dir, { recursive: true, force: true });
      return Promise.resolve();
    },
  });
});

migrationContract("sqlite", () =>
  Promise.resolve({ driver: new SqliteDriver({ path: ":memory:" }), dispose: () => Promise.resolve() }),
);

void describe("openSqliteStore", () => {
  void it("creates the database's directory", async () => {
    const dir = mkdtempSync(join(tmpdir(), "wave-sqlite-"));
    try {
      const { store } = await openSqliteStore({ path: join(dir, "a", "b", "wave.db") });
      await store.putPolicy("warmup", "k", 1, 0);
      await store.close();
      assert.ok(existsSync(join(dir, "a", "b", "wave.db")));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

void describe("openStore", () => {
  void it("opens the configured backend and logs the schema version", async () => {
    const lines: string[] = [];
    const log = createLogger({ write: (l) => lines.push(l) });
    const store = await openStore({ backend: "sqlite", path: ":memory:" }, { log });
    assert.equal(store.backend, "sqlite");
    await store.close();
    const entry = JSON.parse(lines[0] ?? "{}") as Record<string, unknown>;
    assert.equal(entry.msg, "history store open");
    assert.equal(entry.schemaVersion, 3);
    assert.deepEqual(entry.migrationsApplied, [1, 2, 3]);
  });
});
