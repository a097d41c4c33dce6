# syntax=docker/dockerfile:1
#
# CPU-only image for reward-service.
#   docker build -f reward_service.Dockerfile -t reward-service:0.1.0 .
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
RUN --mount=type=bind,from=build,source=/dist,target=/dist \
    python -m venv --without-pip /opt/venv \
    && wheel="$(find /dist -name 'reward_service-*.whl')" \
    && python -m pip --python /opt/venv/bin/python install --require-hashes -r /dist/requirements.lock \
    && python -m pip --python /opt/venv/bin/python install --no-deps "${wheel}" \
    && if [ -n "${EXTRAS}" ]; then \
         python -m pip --python /opt/venv/bin/python install \
           ${EXTRAS_INDEX_URL:+--extra-index-url "${EXTRAS_INDEX_URL}"} "${wheel}[${EXTRAS}]"; \
       fi \
    && groupadd --system --gid 10001 reward \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /tmp \
       --shell /usr/sbin/nologin reward
# Only now: inside the RUN above, `python` must still be the base image's (with pip).
ENV PATH=/opt/venv/bin:$PATH

USER 10001:10001
WORKDIR /tmp
EXPOSE 8000
# Slim images have no curl. Exits non-zero on 503 (warming or draining) too.
HEALTHCHECK --interval=15s --timeout=3s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('REWARD_PORT', '8000') + '/readyz', timeout=2)"]
ENTRYPOINT ["reward-service", "serve"]
