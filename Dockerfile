# syntax=docker/dockerfile:1
# Wave: one image, one process per component (`wave agent | core | webhook`).
# Node.js 24 runs the TypeScript sources directly (type stripping), so there is no compile step
# for the server; only the web UI is bundled. The final image is FROM scratch: Node.js, the
# libraries it links and Wave — no shell, no npm, no package manager (193 MB, docs/install-eks.md).

# BASE: any image with Node.js 24 and npm on glibc Linux, for the build stages and as the source of
# Node.js and its libraries. `npm run image:build` passes one made from Debian packages when this
# machine cannot pull the default (hack/image/build.sh).
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
# The UI bundles the policy models it shares with core (src/policy, ADR 0022); its other imports
# from src/ are types only.
COPY src/policy ./src/policy
COPY src/objects ./src/objects
RUN npm run build:ui

# --- production dependencies only ---------------------------------------------------------------
# Then what Node never reads at run time: type declarations, source maps, TypeScript sources (Node
# does not strip types under node_modules), docs and the packages' own tests (~70 MB of ~130 MB).
FROM ${BASE} AS deps
WORKDIR /src
COPY package.json package-lock.json ./
RUN --mount=type=secret,id=npm-ca,required=false \
    if [ -s /run/secrets/npm-ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm-ca; fi; \
    npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force && \
    find node_modules -type f \( -name '*.ts' -o -name '*.mts' -o -name '*.cts' -o -name '*.map' \
      -o -iname '*.md' -o -iname '*.markdown' \) -delete && \
    find node_modules -type d \( -path 'node_modules/*/test' -o -path 'node_modules/@*/*/test' \
      -o -path 'node_modules/*/tests' -o -path 'node_modules/@*/*/tests' \) -prune -exec rm -rf {} + && \
    rm -f node_modules/.package-lock.json

# --- runtime root: Node.js and the shared libraries it links, nothing else of the base ------------
# No shell, no npm, no package manager in the final image (`wave` is its only program): the Node
# binary, the C/C++ runtime libraries `ldd` names for it (glibc, libstdc++, libgcc_s; glibc ≥ 2.34
# resolves DNS without NSS modules), passwd/group entries for the nonroot user, /tmp and the data
# directory. Node carries its own CA roots, ICU and OpenSSL.
FROM ${BASE} AS root
RUN set -eu; mkdir -p /rootfs/usr/local/bin /rootfs/etc /rootfs/tmp /rootfs/var/lib/wave; \
    cp -L "$(command -v node)" /rootfs/usr/local/bin/node; \
    for lib in $(ldd /rootfs/usr/local/bin/node | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do \
      cp -L --parents "$lib" /rootfs; \
    done; \
    [ ! -e /etc/nsswitch.conf ] || cp /etc/nsswitch.conf /rootfs/etc/; \
    printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/tmp:/sbin/nologin\n' >/rootfs/etc/passwd; \
    printf 'root:x:0:\nnonroot:x:65532:\n' >/rootfs/etc/group; \
    chmod 1777 /rootfs/tmp; chown 65532:65532 /rootfs/var/lib/wave; \
    /rootfs/usr/local/bin/node -e 0

# --- runtime ------------------------------------------------------------------------------------
FROM scratch
# MALLOC_ARENA_MAX: glibc's per-thread malloc arenas hold 7–10 MiB of RSS per process that Node
# never needs (bench/pipeline/README.md). MALLOC_MMAP_THRESHOLD_/MALLOC_TRIM_THRESHOLD_: fixed, so
# buffers of a snapshot's chunks are mapped and returned instead of held by the arena after the
# sync (glibc's threshold otherwise rises to 32 MiB); src/cli/heap.ts MALLOC_ENV, which
# bench:ingest runs its agent with (5k/150k: agent ~340 → 288 MiB).
ENV PATH=/usr/local/bin \
    NODE_ENV=production \
    WAVE_DATA_DIR=/var/lib/wave \
    HOME=/tmp \
    MALLOC_ARENA_MAX=2 \
    MALLOC_MMAP_THRESHOLD_=131072 \
    MALLOC_TRIM_THRESHOLD_=131072
COPY --from=root /rootfs/ /
WORKDIR /app
COPY --from=deps /src/node_modules ./node_modules
COPY package.json ./
COPY bin ./bin
COPY src ./src
COPY --from=ui /src/ui/dist ./ui/dist
# 65532 is the conventional "nonroot" id. The data directory is the only place written besides
# /tmp, so the root filesystem can be mounted read-only; in Kubernetes both are volumes.
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
