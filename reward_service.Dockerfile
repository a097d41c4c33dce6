# syntax=docker/dockerfile:1
#
# CPU-only image for reward-service.
#   docker build -f reward_service.Dockerfile -t reward-service:0.1.0 .
# With the compilers and runtimes the code scorer grades besides Python (any of
# cpp, java, go, js, rust, c, ruby, php, perl, lua, ts, r, verilog, scala, kotlin, csharp, d,
# racket; docs/code.md gives each one's size):
#   docker build -f reward_service.Dockerfile --build-arg LANGS=cpp,java,go,js,rust \
#     -t reward-service:0.1.0-langs .
# With the reward-model extra (pulls torch; the CPU-only wheel index keeps CUDA out:
# its `+cpu` builds rank above PyPI's CUDA ones of the same version):
#   docker build -f reward_service.Dockerfile --build-arg EXTRAS=rm \
#     --build-arg EXTRAS_INDEX_URL=https://download.pytorch.org/whl/cpu -t reward-service:0.1.0-rm .
#
# The base image is pinned by tag. To pin it by digest as well, resolve the digest
# (`docker buildx imagetools inspect python:3.12.11-slim-bookworm`) and build with
#   --build-arg PYTHON_IMAGE=python:3.12.11-slim-bookworm@sha256:<digest>
#
# Dependencies come from requirements.lock (exact versions, hash-checked; refresh
# it with scripts/lock), the service's wheel after them without dependencies.
# tests/deploy/test_image_install.py performs the same install steps (build the
# wheel, install the lock and the wheel into a fresh virtual environment, serve,
# grade one sample): change both together. scripts/image-check builds this file
# and runs the image, without Docker; CI runs it on every submission.

ARG PYTHON_IMAGE=python:3.12.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md requirements.lock ./
COPY reward_service ./reward_service
RUN python -m pip wheel --no-deps --wheel-dir /dist . && cp requirements.lock /dist/

FROM ${PYTHON_IMAGE} AS runtime
# Extras of reward-service to install, comma-separated (e.g. "rm"). Empty: none,
# so the default image has no torch and no CUDA.
ARG EXTRAS=""
# A wheel index consulted besides PyPI for the extras only (see the top).
ARG EXTRAS_INDEX_URL=""
# Languages of the code scorer beyond Python, comma-separated, of cpp, java, go, js, rust,
# c, ruby, php, perl, lua, ts, r, verilog (Debian's g++, OpenJDK 17, Go, Node.js, rustc, gcc,
# Ruby, PHP, Perl, Lua 5.4, TypeScript's library on Node.js, R, Icarus Verilog). Empty: none, so the default image has no compiler and keeps its size.
ARG LANGS=""
ARG VERSION=0.1.0
ARG REVISION=unknown
# Declared again for the label, taking the value given before the first FROM: a
# stage sees no ARG from before the first FROM unless it declares it.
ARG PYTHON_IMAGE
LABEL org.opencontainers.image.title="reward-service" \
      org.opencontainers.image.description="CPU-only HTTP reward service for RL post-training of LLMs (SLIME remote_rm compatible)" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="${PYTHON_IMAGE}"
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_ROOT_USER_ACTION=ignore \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp

# The venv gets no pip of its own: the base image's pip installs into it, so the
# final environment holds the service and its dependencies only. The lock pins and
# hash-checks every dependency; extras (not in the lock) resolve on top of it.
# ifeval/ifbench's Punkt model goes into the venv's nltk_data now, so workers write none.
RUN --mount=type=bind,from=build,source=/dist,target=/dist \
    python -m venv --without-pip /opt/venv \
    && wheel="$(find /dist -name 'reward_service-*.whl')" \
    && python -m pip --python /opt/venv/bin/python install --require-hashes --no-deps -r /dist/requirements.lock \
    && python -m pip --python /opt/venv/bin/python install --no-deps "${wheel}" \
    && if [ -n "${EXTRAS}" ]; then \
         python -m pip --python /opt/venv/bin/python install \
           ${EXTRAS_INDEX_URL:+--extra-index-url "${EXTRAS_INDEX_URL}"} "${wheel}[${EXTRAS}]"; \
       fi \
    && /opt/venv/bin/python -c "from reward_service.scorers.instructions.checkers import install_punkt; print(install_punkt())" \
    && groupadd --system --gid 10001 reward \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /tmp \
       --shell /usr/sbin/nologin reward
# The toolchains LANGS asks for, from Debian; with cpp, the precompiled bits/stdc++.h
# that the code scorer's C++ builds use, and with a C compiler the run launcher, made
# now (the root filesystem is read-only in the pod) beside the venv, where the
# sandbox's runs may read.
# Versions are Debian bookworm's, which its security updates move: not pinned.
# hadolint ignore=DL3008
RUN if [ -n "${LANGS}" ]; then \
      packages=""; set -f; IFS=,; \
      for lang in ${LANGS}; do \
        case "${lang}" in \
          cpp) packages="${packages} g++ libc6-dev" ;; \
          java) packages="${packages} openjdk-17-jdk-headless libjavatuples-java" ;; \
          go) packages="${packages} golang-go" ;; \
          js) packages="${packages} nodejs node-lodash" ;; \
          rust) packages="${packages} rustc" ;; \
          c) packages="${packages} gcc libc6-dev" ;; \
          ruby) packages="${packages} ruby" ;; \
          php) packages="${packages} php-cli" ;; \
          perl) packages="${packages} perl libtest-deep-perl libdata-compare-perl" ;; \
          lua) packages="${packages} lua5.4 lua-unit" ;; \
          ts) packages="${packages} nodejs node-typescript node-lodash" ;; \
          r) packages="${packages} r-base-core" ;; \
          verilog) packages="${packages} iverilog" ;; \
          scala) packages="${packages} openjdk-17-jdk-headless scala" ;; \
          kotlin) packages="${packages} openjdk-17-jdk-headless kotlin" ;; \
          csharp) packages="${packages} mono-mcs mono-runtime libmono-system-numerics4.0-cil gcc libc6-dev" ;; \
          d) packages="${packages} ldc gcc libc6-dev" ;; \
          racket) packages="${packages} racket" ;; \
          *) echo "LANGS: unknown language ${lang} (cpp, java, go, js, rust, c, ruby, php, perl, lua, ts, r, verilog, scala, kotlin, csharp, d, racket)" >&2; exit 1 ;; \
        esac; \
      done; \
      unset IFS; set +f; \
      apt-get update \
      && apt-get install -y --no-install-recommends ${packages} \
      && rm -rf /var/lib/apt/lists/* \
      && /opt/venv/bin/python -c "from reward_service.scorers.code.settings import CodeSettings, prepare_launcher, prepare_pch; print(prepare_pch(CodeSettings())); print(prepare_launcher(CodeSettings()))" \
      && /opt/venv/bin/python -c "from reward_service.sandbox.toolchains import discover; print(discover('/usr/bin:/bin', ['csharp', 'd', 'racket', 'java', 'scala', 'kotlin']))"; \
    fi
# Only now: inside the RUNs above, `python` must still be the base image's (with pip).
ENV PATH=/opt/venv/bin:$PATH

USER 10001:10001
WORKDIR /tmp
EXPOSE 8000
# Slim images have no curl. Exits non-zero on 503 (warming or draining) too.
HEALTHCHECK --interval=15s --timeout=3s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('REWARD_PORT', '8000') + '/readyz', timeout=2)"]
ENTRYPOINT ["reward-service", "serve"]
