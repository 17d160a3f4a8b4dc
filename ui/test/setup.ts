// Loaded with `node --import` before the UI's component tests (npm run test:ui): a DOM from
// happy-dom, and a module hook that compiles .tsx with the same Oxc transform Vite builds the UI
// with (rolldown/utils, installed with Vite), so the tests run the components as shipped.
// Stylesheets import as empty modules. See docs/adr/0013-ui-component-tests.md.
import { readFileSync } from "node:fs";
import { registerHooks } from "node:module";
import { fileURLToPath } from "node:url";
import { GlobalRegistrator } from "@happy-dom/global-registrator";
import { transformSync } from "rolldown/utils";

GlobalRegistrator.register({ url: "http://wave.test/", width: 1280, height: 900 });
// React warns unless it is told it runs under a test's act().
(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

registerHooks({
  load(url, context, nextLoad) {
    if (url.endsWith(".css")) return { format: "module", source: "export default {};", shortCircuit: true };
    if (!url.endsWith(".tsx")) return nextLoad(url, context);
    const path = fileURLToPath(url);
    const out = transformSync(path, readFileSync(path, "utf8"), {
      lang: "tsx",
      jsx: { runtime: "automatic" },
      sourcemap: false,
    });
    if (out.errors.length > 0) throw new Error(`${path}: ${out.errors.map((e) => e.message).join("; ")}`);
    return { format: "module", source: out.code, shortCircuit: true };
  },
});
