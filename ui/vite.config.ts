import { defineConfig } from "vite";

// The UI is served by core from ui/dist; in development `vite` proxies the API to core.
export default defineConfig({
  root: import.meta.dirname,
  base: "./",
  build: { outDir: "dist", emptyOutDir: true, sourcemap: true, chunkSizeWarningLimit: 1024 },
  server: { proxy: { "/api": "http://127.0.0.1:8080" } },
});
