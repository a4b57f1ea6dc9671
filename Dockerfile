# syntax=docker/dockerfile:1
# One image for the whole mesh: the command picks the service.
#   docker run IMAGE serve fusion          (lexical|dense|aisle|category|fusion|rerank|answer|doorman|gateway)
#   docker run IMAGE migrate               (apply the numbered SQL migrations to $DATABASE_URL)
#   docker run IMAGE ingest --shelf PATH   (ingest a shelf.toml and its books)
#
# Build:   docker build -t rulesage:0.1.0 .
# GPU:     docker build -t rulesage:0.1.0-cuda \
#            --build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cu128 \
#            --build-arg ORT_PACKAGE=onnxruntime-gpu .
#
# Stage 1 builds a virtual environment and exports the MiniLM embedder to ONNX (needs torch);
# stage 2 is the runtime: the same venv, the exported models, a non-root user, nothing from the build context.

FROM python:3.11-slim AS build

# torch comes from the PyTorch index (CPU wheels by default, CUDA wheels for the GPU image); pinned to the
# one version the project allows. Everything else comes from PyPI.
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ARG ORT_PACKAGE=onnxruntime

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1

RUN python -m venv /opt/venv \
 && pip install torch==2.13.0 --index-url "${TORCH_INDEX_URL}"

# The build context is whitelisted by .dockerignore (pyproject.toml and the packages only).
WORKDIR /src
COPY . .
# `.[export]` adds transformers + onnx for the export below; torch==2.13.0 is already satisfied.
# Versions are pinned by pyproject.toml, not on this line.
# hadolint ignore=DL3013
RUN pip install ".[export]" \
 && if [ "${ORT_PACKAGE}" != "onnxruntime" ]; then \
      pip uninstall -y onnxruntime && pip install "${ORT_PACKAGE}"; \
    fi \
 && rulesage --help > /dev/null

# Export the encoders to ONNX (fp32) in the state folder at build time, so no pod needs torch at start-up:
# the tuned search encoder (the shared embedder) and its question and card towers when they are shipped
# (exported at the first question), MiniLM off the shelf (the doorman's screen and the
# reranker's trainer read it), and the cross reader and the sentence reader when they are shipped. Kubernetes pods copy these into
# their writable emptyDir state (see k8s/base).
RUN RULESAGE_STATE_DIR=/var/lib/rulesage \
    python -c "from rulesage.embed import shared_embedder; shared_embedder().embed_questions(['export']); shared_embedder().embed_questions(['export'], kind='cards')" \
 && RULESAGE_STATE_DIR=/var/lib/rulesage \
    python -c "from rulesage.embed import Embedder; Embedder(encoder='minilm')" \
 && RULESAGE_STATE_DIR=/var/lib/rulesage \
    python -c "from rulesage.pairs import export_graph as g, is_pair_reader as r; from services.rerank.cross import READER_DIR as c; from services.answer.sentences import SENTENCES_DIR as s; r(c) and g(c, 'cross-reader'); r(s) and g(s, 'sentence-reader')" \
 && test -s /var/lib/rulesage/models/minilm-l6-v2-fp32.onnx \
 && ls /var/lib/rulesage/models/search-encoder-*-fp32.onnx


FROM python:3.11-slim AS runtime

LABEL org.opencontainers.image.title="rulesage" \
      org.opencontainers.image.description="RuleSage: board-game rulings that quote the book (gRPC mesh + gateway)" \
      org.opencontainers.image.licenses="Apache-2.0"

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    MALLOC_ARENA_MAX=2 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    RULESAGE_STATE_DIR=/var/lib/rulesage \
    RULESAGE_HOST=0.0.0.0 \
    RULESAGE_METRICS_PORT=9464 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    HF_HOME=/tmp/hf \
    HOME=/var/lib/rulesage

# A fixed numeric uid/gid: Kubernetes' runAsNonRoot can only verify a numeric USER (k8s/base uses 10001).
RUN groupadd --system --gid 10001 rulesage \
 && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/rulesage --no-create-home \
      --shell /usr/sbin/nologin rulesage

COPY --from=build /opt/venv /opt/venv
COPY --from=build --chown=10001:10001 /var/lib/rulesage /var/lib/rulesage

USER 10001:10001
WORKDIR /var/lib/rulesage

# gRPC services 50061-50067, gateway HTTP 8080, Prometheus /metrics 9464.
EXPOSE 50061 50062 50063 50064 50065 50066 50067 50068 8080 9464

ENTRYPOINT ["rulesage"]
CMD ["serve", "gateway"]
