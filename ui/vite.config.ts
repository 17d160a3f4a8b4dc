import { defineConfig, type Plugin } from "vite";

/**
 * The console's code (main.tsx) is a dynamic import of the small entry (boot.ts), which starts
 * the first screen's API requests first. Preloading it from index.html fetches it beside the
 * entry instead of after it has run.
 */
function preloadConsole(): Plugin {
  return {
    name: "wave-preload-console",
    apply: "build",
    transformIndexHtml: {
      order: "post",
      handler(_html, ctx) {
        const chunk = Object.values(ctx.bundle ?? {}).find(
          (c) => c.type === "chunk" && c.isDynamicEntry && c.facadeModuleId?.endsWith("/src/main.tsx"),
        );
        return chunk
          ? [
              {
                tag: "link",
                attrs: { rel: "modulepreload", crossorigin: true, href: `./${chunk.fileName}` },
                injectTo: "head",
              },
            ]
          : [];
      },
    },
  };
}

// The UI is served by core from ui/dist; in development `vite` proxies the API to core.
export default defineConfig({
  root: import.meta.dirname,
  base: "./",
  build: { outDir: "dist", emptyOutDir: true, sourcemap: true, chunkSizeWarningLimit: 1024 },
  plugins: [preloadConsole()],
  server: { proxy: { "/api": "http://127.0.0.1:8080" } },
});
