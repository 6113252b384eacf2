# booblik: one broker process. Build: docker build -t booblik .
# Run:   docker run -p 127.0.0.1:7979:7979 -v booblik-data:/data booblik
# The data directory and durability come from the environment (see `bun run broker --help`).
FROM oven/bun:1.4.4-slim

# libisal2: hardware CRC32C (the portable fallback is 5-37x slower). No other system package is used.
RUN apt-get update \
 && apt-get install -y --no-install-recommends libisal2 \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
# Dependencies first, for the layer cache. --production skips the development tools (compiler,
# linter, benchmark library); --ignore-scripts skips "prepare", which builds the Node.js client
# library (it needs the compiler; the broker runs the sources).
COPY package.json bun.lock bunfig.toml tsconfig.json ./
RUN bun install --frozen-lockfile --production --ignore-scripts
COPY ffi ./ffi
COPY src ./src

# booblik-cli on the PATH (for the health check and for `docker exec … booblik-cli`).
# The broker runs as uid/gid 10001 (booblik): a bind-mounted data directory must be writable by it,
# e.g. `sudo chown -R 10001:10001 /srv/booblik` before `docker run -v /srv/booblik:/data …`
# (a named volume gets the ownership of /data below by itself).
RUN ln -s /app/src/cli/main.ts /usr/local/bin/booblik-cli \
 && groupadd --system --gid 10001 booblik \
 && useradd --system --uid 10001 --gid 10001 --home-dir /data --shell /usr/sbin/nologin booblik \
 && mkdir -p /data \
 && chown booblik:booblik /data

USER booblik
VOLUME ["/data"]
EXPOSE 7979

# A container's port is reached through Docker's network, so the broker binds the wildcard. booblik
# has no authentication yet: --allow-anonymous says in words that whoever reaches the published port
# can create, read, write and delete every topic. Publish it only where that is acceptable
# (e.g. -p 127.0.0.1:7979:7979).
ENV BOOBLIK_DATA_DIR=/data \
    BOOBLIK_HOST=0.0.0.0 \
    BOOBLIK_ALLOW_ANONYMOUS=yes \
    BOOBLIK_PORT=7979 \
    BOOBLIK_DURABILITY=force

# --local: the address comes from the broker's own settings (BOOBLIK_PORT, BOOBLIK_HOST; a wildcard
# host is reached through loopback), so `docker run -e BOOBLIK_PORT=9000` is checked on 9000. It read
# only BOOBLIK_BROKER (default 127.0.0.1:7979), and such a container stayed unhealthy forever.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["booblik-cli", "health", "--local", "--timeout", "3s"]

# SIGTERM (docker stop) makes the broker finish in-flight requests, force, and mark a clean shutdown.
STOPSIGNAL SIGTERM
CMD ["bun", "run", "broker"]
