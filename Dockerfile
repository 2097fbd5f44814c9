# kmirror container images. Two targets:
#   mirror    (the default: the last stage)  ENTRYPOINT `kmirror entrypoint`
#   validate  the PySpark validation job     ENTRYPOINT `kmirror-validate`
#
# The build reaches neither PyPI nor Maven: it installs only what `make image-inputs`
# (scripts/image-inputs) prepared on the host in .cache/image-inputs/ (hash-pinned wheels, the
# kmirror wheel and its compiled kernel's, the Spark Kafka connector jars); only Debian packages
# come from the network.
#   make image-inputs
#   podman build -t kmirror .                               # or: docker build
#   podman build --target validate -t kmirror-validate .
# `make image` does all of it and tags localhost/kmirror{,-validate}:<version> and :dev.
#
# The base image is pinned by digest: scripts/build-image (`make image`) passes
#   --build-arg BASE_IMAGE=docker.io/library/debian:bookworm-slim@sha256:<digest>
#   --build-arg BASE_DIGEST=sha256:<digest>
# with the digest of the base in local storage (`podman image inspect --format '{{.Digest}}'`;
# here the base is made with debootstrap by scripts/base-image, elsewhere take the registry's
# digest). The venv's interpreter is the base's python3, so the base must be Debian bookworm.
#
# Runtime contract of both final stages: UID/GID 65532, exec-form ENTRYPOINT (no shell), a
# read-only root filesystem works (writes go to the /tmp volume only), no compiler, no pip, no
# package caches.

ARG BASE_IMAGE=docker.io/library/debian:bookworm-slim

# ----------------------------------------------------------------------------- python
# Debian's python3 and the unprivileged user: shared by the builder and the final stages.
FROM ${BASE_IMAGE} AS python
# Unpinned apt versions (DL3008): bookworm only ships security/point updates for them and old
# versions vanish from the archive; the base image digest is the pin.
# hadolint ignore=DL3008
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends ca-certificates python3 \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /var/log/apt /var/log/dpkg.log \
 && echo "kmirror:x:65532:" >>/etc/group \
 && echo "kmirror:x:65532:65532:kmirror:/tmp:/usr/sbin/nologin" >>/etc/passwd \
 && find / -xdev -type f -perm /6000 -exec chmod a-s {} +
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/kmirror/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/tmp

# ----------------------------------------------------------------------------- builder
FROM python AS builder
# hadolint ignore=DL3008
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-venv \
 && rm -rf /var/lib/apt/lists/* \
 && python3 -m venv /opt/kmirror
# Offline, hash-checked, wheels only: the requirements.txt of each input pins every file.
ENV PIP_NO_INDEX=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ONLY_BINARY=:all: \
    PIP_REQUIRE_HASHES=1 \
    PIP_NO_DEPS=1

# Third-party packages only: these big layers stay cached while kmirror's code changes.
FROM builder AS deps-mirror
COPY .cache/image-inputs/runtime/ /wheels/runtime/
RUN /opt/kmirror/bin/python -m pip install --no-cache-dir --find-links /wheels/runtime \
      -r /wheels/runtime/requirements.txt \
 && /opt/kmirror/bin/python -m pip uninstall --yes --quiet pip setuptools

FROM builder AS deps-validate
COPY .cache/image-inputs/validate/ /wheels/validate/
RUN /opt/kmirror/bin/python -m pip install --no-cache-dir --find-links /wheels/validate \
      -r /wheels/validate/requirements.txt \
 && /opt/kmirror/bin/python -m pip uninstall --yes --quiet pip setuptools

# kmirror itself and its record-batch kernel (native/kmirror-batches, a wheel built on the host by
# scripts/build-native), as a small tree the final stages lay over the venv: a code change
# rebuilds (and a registry ships) only this layer. /app-mirror leaves out the validation job.
FROM builder AS app
COPY .cache/image-inputs/app/ /wheels/app/
RUN /opt/kmirror/bin/python -m pip install --no-cache-dir --find-links /wheels/app \
      --prefix /app -r /wheels/app/requirements.txt \
 && cp -a /app /app-mirror \
 && rm -r /app-mirror/bin/kmirror-validate /app-mirror/lib/python3*/site-packages/kmirror_validate

# ----------------------------------------------------------------------------- validate
FROM python AS validate
# The JVM Spark runs on (PySpark 4 needs Java 17+). The slim base has no man1 directory, which
# the JRE's update-alternatives insists on. PySpark's launcher (bin/spark-submit) is a bash
# script: this image keeps Debian's shell for it; the entrypoint itself needs none.
# hadolint ignore=DL3008
RUN mkdir -p /usr/share/man/man1 \
 && apt-get update \
 && DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends openjdk-17-jre-headless \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /var/log/apt /var/log/dpkg.log \
      /usr/share/man/man1 \
 && find / -xdev -type f -perm /6000 -exec chmod a-s {} +
COPY --from=deps-validate /opt/kmirror /opt/kmirror
COPY .cache/image-inputs/jars/ /opt/kmirror/jars/
COPY --from=app /app/ /opt/kmirror/
ENV KMIRROR_SPARK_JARS=/opt/kmirror/jars \
    SPARK_LOCAL_DIRS=/tmp
WORKDIR /tmp
VOLUME ["/tmp"]
USER 65532:65532
ENTRYPOINT ["/opt/kmirror/bin/kmirror-validate"]
ARG BASE_IMAGE
ARG BASE_DIGEST=""
ARG VERSION=dev
ARG REVISION=unknown
ARG SOURCE=""
LABEL org.opencontainers.image.title="kmirror-validate" \
      org.opencontainers.image.description="PySpark job that proves a Kafka mirror is complete and byte-exact" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="${BASE_IMAGE}" \
      org.opencontainers.image.base.digest="${BASE_DIGEST}"

# ----------------------------------------------------------------------------- mirror
# Last stage: what `podman build .` / `docker build .` produce without --target.
FROM python AS mirror
COPY --from=deps-mirror /opt/kmirror /opt/kmirror
COPY --from=app /app-mirror/ /opt/kmirror/
WORKDIR /tmp
VOLUME ["/tmp"]
USER 65532:65532
# Prometheus /metrics, /healthz, /readyz (KMIRROR_METRICS_PORT).
EXPOSE 9404
# PID 1 is kmirror itself: it forwards SIGTERM to its stream processes, reaps children and
# exits with the mirror's code.
ENTRYPOINT ["/opt/kmirror/bin/kmirror", "entrypoint"]
ARG BASE_IMAGE
ARG BASE_DIGEST=""
ARG VERSION=dev
ARG REVISION=unknown
ARG SOURCE=""
LABEL org.opencontainers.image.title="kmirror" \
      org.opencontainers.image.description="Byte-exact Kafka cluster mirroring, at least once or exactly once" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="${BASE_IMAGE}" \
      org.opencontainers.image.base.digest="${BASE_DIGEST}"
