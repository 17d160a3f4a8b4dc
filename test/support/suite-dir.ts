// A temporary directory for one test suite: made before its tests, removed after them.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before } from "node:test";

/** Registers the suite's directory (named after `prefix`): `setup` gets it before the tests run. */
export function suiteDir(prefix: string, setup: (dir: string) => void): void {
  let dir = "";
  before(() => {
    dir = mkdtempSync(join(tmpdir(), prefix));
    setup(dir);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));
}
