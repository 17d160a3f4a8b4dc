# syntax=docker/dockerfile:1
# Wave: one image, one process per component (`wave agent | core | webhook`).
# Node.js 24 runs the TypeScript sources directly (type stripping), so there is no compile step
# for the server; only the web UI is bundled.

# BASE: any image with Node.js 24 and npm on glibc Linux. `npm run image:build` passes one made from
# Debian packages when this machine cannot pull the default (hack/image/build.sh).
ARG BASE=node:24-slim

# --- web UI bundle (needs the dev dependencies: vite) -------------------------------------------
FROM ${BASE} AS ui
WORKDIR /src
COPY package.json package-lock.json ./
# --ignore-scripts: the `node` dev dependency would otherwise download a second Node binary.
# npm-ca (optional build secret, never in a layer): a CA bundle for a TLS-inspecting proxy between
# the build and the npm registry (hack/image/build.sh passes the machine's npm cafile).
RUN --mount=type=secret,id=npm-ca,required=false \
    if [ -s /run/secrets/npm-ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm-ca; fi; \
    npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY ui ./ui
RUN npm run build:ui

# --- production dependencies only ---------------------------------------------------------------
FROM ${BASE} AS deps
WORKDIR /src
COPY package.json package-lock.json ./
RUN --mount=type=secret,id=npm-ca,required=false \
    if [ -s /run/secrets/npm-ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm-ca; fi; \
    npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

# --- runtime ------------------------------------------------------------------------------------
FROM ${BASE}
# MALLOC_ARENA_MAX: glibc's per-thread malloc arenas hold 7–10 MiB of RSS per process that Node
# never needs (bench/pipeline/README.md).
ENV NODE_ENV=production \
    WAVE_DATA_DIR=/var/lib/wave \
    HOME=/tmp \
    MALLOC_ARENA_MAX=2
WORKDIR /app
COPY --from=deps /src/node_modules ./node_modules
COPY package.json ./
COPY bin ./bin
COPY src ./src
COPY --from=ui /src/ui/dist ./ui/dist
# 65532 is the conventional "nonroot" id. The data directory is the only place written besides
# /tmp, so the root filesystem can be mounted read-only; in Kubernetes both are volumes.
RUN mkdir -p /var/lib/wave && chown 65532:65532 /var/lib/wave
USER 65532:65532
EXPOSE 8080 8081 8443
# OCI labels. The per-build ones (version, revision, created, source) are `podman build --label`s
# from hack/image/build.sh, not ARGs here: buildah's layer cache keys a LABEL by its text before ARG
# expansion, so a cached build kept the previous commit's revision and date.
LABEL org.opencontainers.image.title="wave" \
      org.opencontainers.image.description="Wave: a dashboard, node warmup and spot placement add-on for Kubernetes clusters that run Karpenter" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.vendor="Wave"
ENTRYPOINT ["node", "bin/wave.ts"]
CMD ["--help"]
