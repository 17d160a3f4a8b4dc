import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { chmod, mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../../shared/log.ts";
import { storeContract } from "./contract.ts";
import { openStore } from "./open.ts";
import { migrationContract } from "./migrations.contract.ts";
import { migrate, sqliteMigrations } from "./migrations.ts";
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

migrationContract(
  "sqlite",
  () => Promise.resolve({ driver: new SqliteDriver({ path: ":memory:" }), dispose: () => Promise.resolve() }),
  sqliteMigrations,
);

void describe("openSqliteStore", () => {
  void it("creates the database's directory", async () => {
    const dir = mkdtempSync(join(tmpdir(), "wave-sqlite-"));
    try {
      const { store } = await openSqliteStore({ path: join(dir, "a", "b", "wave.db") });
      await store.putPolicy("c1", "warmup", "k", 1, 0);
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
    assert.equal(entry.schemaVersion, 14);
    assert.deepEqual(entry.migrationsApplied, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
  });
});

void describe("policies from before clusters (schema 2 → 3)", () => {
  void it("keep their rows and go to the cluster core adopts them for; its own policies win", async () => {
    const dir = mkdtempSync(join(tmpdir(), "wave-sqlite-"));
    const path = join(dir, "wave.db");
    try {
      const old = new SqliteDriver({ path });
      await migrate(old, sqliteMigrations.slice(0, 2), 0);
      await old.run(
        "INSERT INTO policies (kind, key, value, updated_at) VALUES ('spot', 'shop/Deployment/web', '{\"threshold\":2}', 5), ('warmup', 'general', '{\"enabled\":true}', 6)",
      );
      await old.close();
      const { store, migrations } = await openSqliteStore({ path });
      assert.deepEqual(migrations.applied, [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
      assert.equal((await store.listPolicies("east", "spot")).length, 0, "not any cluster's before adoption");
      await store.putPolicy("east", "warmup", "general", { enabled: false }, 7);
      assert.equal(await store.adoptPolicies("east"), 1);
      assert.deepEqual((await store.getPolicy("east", "spot", "shop/Deployment/web"))?.value, {
        threshold: 2,
      });
      assert.deepEqual((await store.getPolicy("east", "warmup", "general"))?.value, { enabled: false });
      assert.equal(await store.adoptPolicies("west"), 0, "adopted once, by one cluster");
      assert.equal((await store.listPolicies("west", "spot")).length, 0);
      await store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("sqlite file permissions (issue #16)", () => {
  it("creates the database, its WAL and shared-memory files readable by the owner only", async () => {
    const dir = await mkdtemp(join(tmpdir(), "wave-sqlite-mode-"));
    const old = process.umask(0o022);
    try {
      const path = join(dir, "data", "wave.db");
      const { store } = await openSqliteStore({ path });
      await store.putPolicy("default", "warmup", "general", { enabled: true }, 1);
      for (const f of [path, `${path}-wal`, `${path}-shm`]) {
        assert.equal((await stat(f)).mode & 0o777, 0o600, f);
      }
      assert.equal((await stat(join(dir, "data"))).mode & 0o077, 0, "data directory");
      await store.close();
      // A file an older version left world-readable is tightened on open.
      const legacy = join(dir, "legacy.db");
      await writeFile(legacy, "");
      await chmod(legacy, 0o644);
      const again = await openSqliteStore({ path: legacy });
      assert.equal((await stat(legacy)).mode & 0o777, 0o600);
      await again.store.close();
    } finally {
      process.umask(old);
      await rm(dir, { recursive: true, force: true });
    }
  });
});
