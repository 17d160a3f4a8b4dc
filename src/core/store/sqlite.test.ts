import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { storeContract } from "./contract.ts";
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
