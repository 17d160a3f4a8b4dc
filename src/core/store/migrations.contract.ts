// Migration-runner behaviour every backend must show; run by sqlite.test.ts and postgres.test.ts.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { SqlDriver } from "./driver.ts";
import { assertExpand, migrate, SCRUB_SESSION_TOKENS } from "./migrations.ts";
import type { Migration } from "./migrations.ts";
import { migrate23cd1c2 } from "./testdata/migrate-23cd1c2.ts";

/** A test migration: an expand unless `kind` says otherwise. */
const migration = (version: number, name: string, sql: string, kind?: "contract"): Migration => ({
  version,
  name,
  sql,
  ...(kind ? { kind } : {}),
});
const v1 = migration(1, "notes", "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)", "contract");
const v2 = migration(
  2,
  "notes.author",
  "ALTER TABLE notes ADD COLUMN author TEXT; CREATE INDEX notes_author ON notes (author);",
);
const broken = migration(
  3,
  "half broken",
  "CREATE TABLE tags (id INTEGER PRIMARY KEY); CREATE TABLE tags (id INTEGER PRIMARY KEY);",
);
// A release's expand and, a release later, its contract (docs/upgrade.md).
const v3 = migration(
  3,
  "notes.lang",
  "ALTER TABLE notes ADD COLUMN lang TEXT NOT NULL DEFAULT 'en'; CREATE TABLE labels (note INTEGER NOT NULL, label TEXT NOT NULL);",
);
const v4 = migration(
  4,
  "notes.author dropped",
  "DROP INDEX notes_author; ALTER TABLE notes DROP COLUMN author;",
  "contract",
);
/** An expand a release after this one might add to the real list (a table of its own). */
const nextExpand = (version: number): Migration =>
  migration(
    version,
    "a future expand",
    "CREATE TABLE future_expand (id INTEGER PRIMARY KEY, note TEXT); CREATE INDEX future_expand_note ON future_expand (note);",
  );

export function migrationContract(
  name: string,
  makeDriver: () => Promise<{ driver: SqlDriver; dispose: () => Promise<void> }>,
  /** The backend's real list (sqliteMigrations, postgresMigrations). */
  release: readonly Migration[],
  opts: { skip?: string | undefined } = {},
): void {
  /** Runs `test` on a new database, closed and disposed of after it. */
  const withDriver = async (test: (driver: SqlDriver) => Promise<void>): Promise<void> => {
    const { driver, dispose } = await makeDriver();
    try {
      await test(driver);
    } finally {
      await driver.close();
      await dispose();
    }
  };
  void describe(`migrations: ${name}`, { skip: opts.skip ?? false }, () => {
    void it("the sessions' stored ID tokens are scrubbed (issue 42), the rest of each session kept", async () => {
      await withDriver(async (driver) => {
        const at = release.findIndex((m) => m.name === SCRUB_SESSION_TOKENS);
        assert.ok(at > 0, "the scrub is in the release");
        await migrate(driver, release.slice(0, at), 1);
        await driver.run(
          "INSERT INTO console_sessions (id_hash, subject, name, groups, expires_at, id_token) VALUES ($1, $2, $3, $4, $5, $6)",
          [
            "a".repeat(64),
            "ann@example.com",
            "Ann",
            '["wave-admins"]',
            9e12,
            "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbm4ifQ.c2ln",
          ],
        );
        assert.deepEqual((await migrate(driver, release, 2)).applied, [release[at]?.version]);
        const rows = await driver.all("SELECT subject, id_token FROM console_sessions");
        assert.deepEqual(
          rows.map((r) => [r.subject, r.id_token]),
          [["ann@example.com", null]],
        );
      });
    });
    void it("applies new versions in order, once, and rolls a failing one back entirely", async () => {
      await withDriver(async (driver) => {
        assert.deepEqual(await migrate(driver, [v1], 1), { applied: [1], version: 1 });
        assert.deepEqual(await migrate(driver, [v1], 2), { applied: [], version: 1 });
        assert.deepEqual(await migrate(driver, [v1, v2], 3), { applied: [2], version: 2 });
        await driver.run("INSERT INTO notes (id, body, author) VALUES (1, 'x', 'ann')");

        await assert.rejects(migrate(driver, [v1, v2, broken], 4), /migration 3 \(half broken\) failed/);
        // Nothing of version 3 is left: not its first table, not its row in schema_migrations.
        await assert.rejects(driver.all("SELECT id FROM tags"));
        const versions = await driver.all(
          "SELECT version FROM schema_migrations UNION ALL SELECT version FROM schema_expansions ORDER BY version",
        );
        assert.deepEqual(
          versions.map((r) => Number(r.version)),
          [1, 2],
        );
        assert.equal((await driver.all("SELECT author FROM notes"))[0]?.author, "ann");

        // v2 is an expand: a build that knows only v1 still starts (contracts: the test below).
        assert.deepEqual(await migrate(driver, [v1], 5), { applied: [], version: 1, ahead: [2] });
        await assert.rejects(migrate(driver, [v2], 5), /expected version 1/);
      });
    });

    void it("expand: a build that knows fewer migrations runs on the newer schema; contract: it refuses", async () => {
      await withDriver(async (driver) => {
        await migrate(driver, [v1, v2], 1);
        await driver.run("INSERT INTO notes (id, body, author) VALUES (1, 'x', 'ann')");
        assert.deepEqual(await migrate(driver, [v1, v2, v3], 2), { applied: [3], version: 3 });
        const ledger = async (t: string): Promise<number[]> =>
          (await driver.all(`SELECT version FROM ${t} ORDER BY version`)).map((r) => Number(r.version));
        assert.deepEqual(await ledger("schema_migrations"), [1]);
        assert.deepEqual(await ledger("schema_expansions"), [2, 3]);

        // Rolled back to the build of [v1, v2]: it starts, sees v3 as ahead, and its writes work.
        assert.deepEqual(await migrate(driver, [v1, v2], 3), { applied: [], version: 2, ahead: [3] });
        await driver.run("INSERT INTO notes (id, body, author) VALUES (2, 'y', 'bob')");
        assert.deepEqual(
          (await driver.all("SELECT id, lang FROM notes ORDER BY id")).map((r) => [Number(r.id), r.lang]),
          [
            [1, "en"],
            [2, "en"],
          ],
        );

        // The contract, a release later: the build of [v1..v3] still starts before it, not after.
        assert.deepEqual(await migrate(driver, [v1, v2, v3, v4], 4), { applied: [4], version: 4 });
        await assert.rejects(
          migrate(driver, [v1, v2, v3], 5),
          /schema version 4 is newer than this build knows \(3\)/,
        );
      });
    });

    void it("an expand that is not additive is refused before anything runs", async () => {
      for (const sql of [
        "DROP TABLE notes",
        "ALTER TABLE notes RENAME COLUMN body TO text",
        "ALTER TABLE notes ADD COLUMN lang TEXT NOT NULL",
        "CREATE UNIQUE INDEX notes_body ON notes (body)",
        "DELETE FROM notes",
      ])
        assert.throws(() => assertExpand({ version: 9, name: "x", sql }), /is an expand but/, sql);
      assert.doesNotThrow(() => assertExpand(v3));
      assert.doesNotThrow(() => assertExpand(nextExpand(9)));
      await withDriver(async (driver) => {
        await assert.rejects(
          migrate(driver, [v1, { ...v4, version: 2, kind: "expand" }], 1),
          /is an expand but/,
        );
        await assert.rejects(driver.all("SELECT version FROM schema_migrations"));
      });
    });

    void it("the previous release (23cd1c2's runner and list) starts on the schema this build and the next expand leave", async () => {
      await withDriver(async (driver) => {
        const previous = release.slice(0, 8); // 23cd1c2's list: versions 1–8, unchanged since
        await migrate23cd1c2(driver, previous, 1);
        const upgraded = await migrate(driver, [...release, nextExpand(release.length + 1)], 2);
        assert.deepEqual(upgraded.applied, [...release.slice(8).map((m) => m.version), release.length + 1]);
        // `helm rollback`: the previous core's own runner accepts the schema and applies nothing.
        assert.deepEqual(await migrate23cd1c2(driver, previous, 3), { applied: [], version: 8 });
        // and rolled forward again, nothing is applied twice.
        assert.deepEqual(await migrate(driver, [...release, nextExpand(release.length + 1)], 4), {
          applied: [],
          version: release.length + 1,
        });
      });
    });
  });
}
