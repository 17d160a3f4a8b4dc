// The npm package's package.json (hack/pack/pack.sh), made from the repository's: the same name,
// version, license and runtime dependencies; `wave` runs the compiled bin/wave.js. No scripts and
// no devDependencies: installing the package runs nothing of ours.
import { readFileSync } from "node:fs";

interface Manifest {
  name: string;
  version: string;
  description: string;
  license: string;
  engines: Record<string, string>;
  dependencies: Record<string, string>;
}

export function packageManifest(root: Manifest): Record<string, unknown> {
  return {
    name: root.name,
    version: root.version,
    description: root.description,
    license: root.license,
    type: "module",
    engines: root.engines,
    bin: { wave: "./bin/wave.js" },
    files: ["bin/", "src/", "ui/dist/", "LICENSE", "README.md", "CHANGELOG.md"],
    dependencies: root.dependencies,
  };
}

if (import.meta.main) {
  const root = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as Manifest;
  process.stdout.write(`${JSON.stringify(packageManifest(root), null, 2)}\n`);
}
