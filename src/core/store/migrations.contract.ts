// Migration-runner behaviour every backend must show; run by sqlite.test.ts and postgres.test.ts.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { SqlDriver } from "./driver.ts";
import { migrate } from "./migrations.ts";
import type { Migration } from "./migrations.ts";

const v1: Migration = {
  version: 1,
  name: "notes",
  sql: "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)",
};
const v2: Migration = {
  version: 2,
  name: "notes.author",
  sql: "ALTER TABLE notes ADD COLUMN author TEXT; CREATE INDEX notes_author ON notes (author);",
};
const broken: Migration = {
  version: 3,
  name: "half broken",
  sql: "CREATE TABLE tags (id INTEGER PRIMARY KEY); CREATE TABLE tags (id INTEGER PRIMARY KEY);",
};

export function migrationContract(
  name: string,
  makeDriver: () => Promise<{ driver: SqlDriver; dispose: () => Promise<void> }>,
  opts: { skip?: string | undefined } = {},
): void {
  void describe(`migrations: ${name}`, { skip: opts.skip ?? false }, () => {
    void it("applies new versions in order, once, and rolls a failing one back entirely", async () => {
      const { driver, dispose } = await makeDriver();
      try {
        assert.deepEqual(await migrate(driver, [v1], 1), { applied: [1], version: 1 });
        assert.deepEqual(await migrate(driver, [v1], 2), { applied: [], version: 1 });
        assert.deepEqual(await migrate(driver, [v1, v2], 3), { applied: [2], version: 2 });
        await driver.run("INSERT INTO notes (id, body, author) VALUES (1, 'x', 'ann')");

        await assert.rejects(migrate(driver, [v1, v2, broken], 4), /migration 3 \(half broken\) failed/);
        // Nothing of version 3 is left: not its first table, not its row in schema_migrations.
        await assert.rejects(driver.all("SELECT id FROM tags"));
        const versions = await driver.all("SELECT version FROM schema_migrations ORDER BY version");
        assert.deepEqual(
          versions.map((r) => Number(r.version)),
          [1, 2],
        );
        assert.equal((await driver.all("SELECT author FROM notes"))[0]?.author, "ann");

        await assert.rejects(migrate(driver, [v1], 5), /newer than this build knows/);
        await assert.rejects(migrate(driver, [v2], 5), /expected version 1/);
      } finally {
        await driver.close();
        await dispose();
      }
    });
  });
}
