# kmirror — `make help` lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

export KMIRROR_CACHE ?= $(HOME)/.cache/kmirror
VENV := .venv
PY := $(VENV)/bin/python
PYTEST := $(VENV)/bin/pytest
# The test session starts the two local clusters itself (tests/conftest.py) and always stops
# them; KMIRROR_SOURCE_BOOTSTRAP/KMIRROR_TARGET_BOOTSTRAP point it at other clusters instead.
PYTEST_ARGS ?=

.PHONY: registry test-security k8s-binaries k8s-up k8s-down test-k8s help setup venv native jars go-tools system-deps lint typecheck test test-unit test-integration \
        test-chart test-spark test-image test-faults test-faults-short test-soak demo clusters-up clusters-down clusters-status \
        image image-inputs push bench bench-validate bench-smoke bench-dr bench-throttle bench-wan chart-docs chart-docs-tool chart-rules env-docs module-graph clean

help: ## List the targets
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk -F':.*?## ' '{printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2}'

setup: venv jars registry go-tools system-deps chart-docs-tool ## Install everything the tests need (idempotent; seconds when warm)

venv: $(VENV)/.installed $(VENV)/.native ## Python venv with both packages, the record-batch kernel and the dev tools (hash-locked)
$(VENV)/.installed: requirements/dev.lock pyproject.toml
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --require-hashes -r requirements/dev.lock
	$(PY) -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
	@touch $@

# The record-batch kernel (Rust, PyO3): a wheel built by maturin from crates.io crates pinned by
# Cargo.lock, offline once cargo's cache has them (scripts/build-native).
NATIVE_SOURCES := $(wildcard native/kmirror-batches/Cargo.* native/kmirror-batches/*.pyi native/kmirror-batches/src/*.rs)
native: $(VENV)/.native ## Build the record-batch kernel (native/kmirror-batches) and install it into the venv
$(VENV)/.native: $(VENV)/.installed $(NATIVE_SOURCES) scripts/build-native
	scripts/build-native
	@touch $@

jars: ## Kafka broker, MirrorMaker 2 and spark-sql-kafka jars from Maven Central into the cache
	@scripts/resolve-jars

registry: ## Apicurio Registry 3.3.3 (schema registry for the schema tests and the demo) from Maven Central into the cache
	@scripts/registry-local fetch >/dev/null

go-tools: ## helm, ct, kubeconform, promtool, the test image registry and Toxiproxy built from the Go module proxy into the cache
	@scripts/build-go-tools

system-deps: ## podman, runc, debootstrap from Debian (for the image tests)
	@scripts/system-deps

lint: venv ## ruff lint + format check, hadolint on the Containerfiles (any finding fails)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/hadolint Dockerfile scripts/k8s/pause/Containerfile

typecheck: venv ## mypy --strict on both packages and scripts/
	$(VENV)/bin/mypy

# Everything but the long tier (make test-faults: the full fault suite and the other minute-long
# runs) and the benchmark smoke run (make bench-smoke); the short fault scenarios and the
# live-Kubernetes suite are in. Two pytest sessions side by side, each with a Kafka pair of its
# own (scripts/run-tests says which tests run where, and why). Pytest starts the image build
# and (root) the Kubernetes build in the background under nice -n 19 as soon as it has
# collected, runs the image tests and then the k8s tests last, and they wait for the builds
# (tests/prebuild.py; times in docs/kubernetes.md). K8S=0 leaves out the k8s tests (a machine
# that cannot run Kubernetes).
K8S ?= 1
ifeq ($(K8S),1)
TEST_MARKERS ?= not slow and not bench and not soak
else
TEST_MARKERS ?= not slow and not bench and not soak and not k8s
endif

test: setup lint typecheck ## The suite: lint, types, unit, integration, bad input, chart, image, spark, security, short faults, helm on a live Kubernetes (K8S=0: without)
	scripts/run-tests "$(TEST_MARKERS)" --durations=40 $(PYTEST_ARGS)

test-unit: venv ## Pure-logic tests, no broker
	$(PYTEST) -m unit $(PYTEST_ARGS)

test-integration: setup ## Integration tests against the two local clusters
	$(PYTEST) -m integration $(PYTEST_ARGS)

test-chart: venv go-tools chart-docs-tool ## Helm chart: helm lint, ct lint, Kubernetes schemas (3 versions), template tests
	$(PYTEST) -m chart tests/chart $(PYTEST_ARGS)

test-spark: setup ## The PySpark validation job: compare functions, three validation runs, the CLI
	$(PYTEST) -m spark tests/spark $(PYTEST_ARGS)

chart-docs-tool: ## Bitnami readme-generator-for-helm, pinned by scripts/chart-docs-tool/package-lock.json (npm ci into the cache)
	@scripts/chart-docs --install

chart-docs: ## Regenerate the Parameters section of chart/kmirror/README.md from values.yaml (readme-generator-for-helm)
	scripts/chart-docs

# K8S=0 leaves out the mirror as a Deployment under faults (it needs root for the local
# Kubernetes), as it does for make test.
test-faults: setup image ## The long tier: the full fault-injection suite (30 kills, 5 broker restarts, 2-minute outage), the mirror as a Deployment under faults (local Kubernetes; K8S=0: without) and the other minute-long runs
	KMIRROR_FAULTS=full $(PYTEST) -m "slow$(if $(filter 0,$(K8S)), and not k8s)" $(PYTEST_ARGS)

test-faults-short: setup ## The short fault scenarios make test runs, on their own
	$(PYTEST) -m faults $(PYTEST_ARGS)

# The soak (marker `soak`, not `slow`: make test-faults leaves it out too). KMIRROR_SOAK_MINUTES,
# KMIRROR_SOAK_FAULT_EVERY_S, KMIRROR_SOAK_RATE, ... (docs/reliability.md, Soak);
# KMIRROR_CLUSTERS3 names the 3-broker pair (a healthy one is reused).
test-soak: setup ## The soak: an hour at 70 % of the measured capacity, a fault every 5 min; RSS/fd slopes, lag, 0 missing (bench/results/soak.json)
	$(PYTEST) -m soak tests/faults/test_soak.py $(PYTEST_ARGS)

demo: setup ## Mirror sample topics between two embedded clusters, validate, summarise
	$(PY) -m scripts.demo

clusters-up: jars venv ## Start the local `source` (19092) and `target` (29092) clusters
	$(PY) scripts/kafka-local up

clusters-down: ## Stop the local clusters and remove their data
	$(PY) scripts/kafka-local down

clusters-status: ## Show which local clusters run
	$(PY) scripts/kafka-local status

image-inputs: venv jars ## Hash-checked wheelhouse and jar directory for offline image builds
	scripts/image-inputs

image: image-inputs system-deps ## Build the `mirror` and `validate` images with podman (base pinned by digest) and their CycloneDX SBOMs in .cache/sbom/
	scripts/build-image

# REGISTRY=host[:port][/path]; credentials from `podman login` (or REGISTRY_AUTH_FILE), the
# registry's CA from /etc/containers/certs.d/ or KMIRROR_REGISTRY_CERT_DIR (docs/kubernetes.md).
push: image ## Tag and push both images to REGISTRY=host[:port][/path] as kmirror/mirror and kmirror/validate (the chart's repositories)
	scripts/push-image "$(REGISTRY)"

test-image: venv jars system-deps ## Build both images (cached) and run them against the local clusters
	$(PYTEST) -m image tests/image $(PYTEST_ARGS)

chart-rules: venv ## Regenerate the chart's cluster and security rules (schema, files/rules.json, README table) from the image's model
	$(PY) scripts/chart-rules

env-docs: venv ## Regenerate the variable table in docs/configuration.md from kmirror/config/env.py
	$(PY) scripts/env-docs

module-graph: venv ## Redraw the package picture in docs/architecture.md from the imports
	$(PY) -m scripts.modulegraph

bench: setup ## Full benchmark: kmirror vs Apache MirrorMaker 2, 5 workloads, latency, sustained rate, schema-ID translation (about 40 min quiet; 30 GB free disk)
	$(PY) -m scripts.bench.run --full

bench-validate: setup ## Validation speed: digest mode over 2 M records per side vs a plain Spark read-and-count
	@mkdir -p bench/results
	$(PY) scripts/kafka-local up
	$(PY) scripts/bench_validate.py --json-out bench/results/validate.json; rc=$$?; \
	  $(PY) scripts/kafka-local down; exit $$rc

bench-dr: setup ## Failover and failback, kmirror vs MM2, on two clusters of its own: records read again or never (about 10 min)
	@mkdir -p bench/results
	$(PY) -m scripts.bench.dr_failover --json-out bench/results/dr.json

bench-throttle: setup ## Throttle figure: a 10 MiB/s backlog limit over a minute and live p99 beside it, on two clusters of its own (ENGINES=auto,record,batch; 1.5 min per engine after 1.5 min of cluster start and preload; about 3.5 GB free disk)
	@mkdir -p bench/results
	$(PY) -m scripts.bench.throttle --engines $(or $(ENGINES),auto) --json-out bench/results/throttle.json

bench-wan: setup ## WAN: kmirror vs MM2 consuming the source across 0/25/50/100 ms of RTT (Toxiproxy), 100 B and 1 KB; bench/results/wan.json (about 25 min)
	$(PY) -m scripts.bench.wan --json-out bench/results/wan.json

bench-smoke: setup ## Small backlogs through every contender, ceiling and phase, checked by pytest (about 2 min)
	$(PYTEST) -m bench $(PYTEST_ARGS)

clean: ## Remove the venv and build leftovers (the cache stays)
	rm -rf $(VENV) build dist *.egg-info .mypy_cache .ruff_cache .pytest_cache

test-security: setup ## SASL_SSL (SCRAM-SHA-512), mTLS and OAUTHBEARER (OIDC, MSK IAM) cluster with a CA made by the run; no secret leaks
	$(PYTEST) -m security $(PYTEST_ARGS)

k8s-binaries: ## Kubernetes v1.37.2 + etcd built from the Go module proxy into the cache (cold: long)
	@scripts/k8s/build-binaries

k8s-up: system-deps k8s-binaries ## Start the local single-node Kubernetes cluster (returns when the node is Ready)
	scripts/k8s-local up

k8s-down: ## Stop the local Kubernetes cluster and remove all its state
	scripts/k8s-local down

test-k8s: setup k8s-binaries image ## helm install/test/upgrade/uninstall on the local cluster (starts and stops it)
	$(PYTEST) -m "k8s and not slow" tests/k8s $(PYTEST_ARGS)
