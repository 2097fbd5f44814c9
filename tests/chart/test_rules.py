"""The chart's cluster and security rules are the image's (kmirror/cli/chartrules.py reads them
off the model; `make chart-rules` writes them into values.schema.json, files/rules.json and the
README): the committed files are current, values.yaml's defaults are the model's, and over every
documented combination (the ci/ files, the contract renders and a matrix generated from the
model) the chart accepts exactly what the image's entrypoint accepts without a warning.

"Accepts" on the chart's side: `helm template` passes the schema (checked here with jsonschema on
the merged values, as helm does) and the validateValues helper. On the image's side: the
environment the chart renders for the mirror container, with its Secrets as files, goes through
the entrypoint's loader in this process (entrypoint.render.build_plan and plan_config) with
KMIRROR_STRICT=true, so a setting the image would ignore counts as refused, as the schema
refuses it. No cluster is needed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from kmirror.cli import chartfiles
from kmirror.cli import chartrules as cr
from kmirror.config import sides
from kmirror.entrypoint.render import build_plan, plan_config
from kmirror.errors import ConfigError
from tests.chart import chartlib
from tests.chart.chartlib import FieldRef, SecretRef
from tests.chart.test_contract import RENDERS

pytestmark = pytest.mark.chart

VALUES: dict[str, Any] = yaml.safe_load((chartlib.CHART_DIR / "values.yaml").read_text())
SCHEMA = jsonschema.Draft7Validator(
    json.loads((chartlib.CHART_DIR / "values.schema.json").read_text())
)
BLOCKS = ("source", "target", "thisCluster", "external")


def test_generated_files_are_current() -> None:
    for name, update in chartfiles.OUTPUTS.items():
        text = (chartlib.CHART_DIR / name).read_text(encoding="utf-8")
        assert update(text) == text, f"chart/kmirror/{name} is stale: run `make chart-rules`"


def _at(values: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        values = values[part]
    return values


@pytest.mark.parametrize("side", sides.SIDES)
def test_values_yaml_defaults_are_the_models(side: str) -> None:
    for row in cr.ROWS:
        if row.block == "cluster":
            for block in BLOCKS:
                assert _at(VALUES[block], row.when) == row.default, (block, row.when)
        else:
            path = cr.values_path("", side, row.when)
            assert _at(VALUES, path) == row.default, path


# ------------------------------------------------------------------------------ the matrix

SAMPLES = {
    "existingSecret": "creds",
    "caSecret": "ca",
    "clientCertSecret": "client-tls",
    "keyPasswordKey": "key.pass",
    "endpointIdentificationAlgorithm": "none",
    "tokenEndpointUrl": "https://idp.example.com/token",
    "unsecuredConfig": "principal=mirror",
    "awsRegion": "eu-west-1",
    "awsRoleArn": "arn:aws:iam::1:role/mirror",
}


def _put(values: dict[str, Any], path: tuple[str, ...], value: str) -> None:
    for part in path[:-1]:
        values = values.setdefault(part, {})
    values[path[-1]] = value


def side_values(block: str, side: str, who: cr.Who, paths: set[cr.Path_]) -> dict[str, Any]:
    """Values that give `block` (playing `side`) the protocol, mechanism and method of `who`
    and set the side-view values `paths`."""
    out: dict[str, Any] = {}
    given = dict(zip((cr.PROTOCOL, cr.MECHANISM, cr.METHOD), who, strict=True))
    for path in {cr.PROTOCOL, cr.MECHANISM, cr.METHOD} | paths:
        value = given.get(path) or SAMPLES.get(path[-1], f"{path[-1]}-value")
        _put(out, cr.values_path(block, side, path), value)
    return out


def whos() -> Iterator[cr.Who]:
    """Each protocol/mechanism/method the model tells apart, the invalid ones included."""
    seen = set()
    for p, m, x in cr.combinations():
        reads = {r.when for r in cr.ROWS if r.name in cr.verdict((p, m, x)).reads}
        if m and cr.MECHANISM not in reads and cr.verdict((p, m, x)).valid:
            continue  # the protocol reads no mechanism: an unread value (_unread)
        key = (p, m, x if cr.METHOD in reads else "")
        if key not in seen:
            seen.add(key)
            yield p, m, x


def _read(who: cr.Who) -> set[cr.Path_]:
    return {r.when for r in cr.ROWS if r.name in cr.verdict(who).reads} - {cr.BOOTSTRAP}


def _name(who: cr.Who) -> str:
    if not cr.verdict(who).valid:
        return f"{who[0]} {who[1] or 'without a mechanism'}"
    return "/".join(w for w in (*who[:2], who[2] if cr.METHOD in _read(who) else "") if w)


BASE = {
    "source": {"bootstrapServers": "src.example.com:9092"},
    "target": {"bootstrapServers": "tgt.example.com:9092"},
}
Case = tuple[str, Any]


def _per_who() -> Iterator[Case]:
    """Each protocol/mechanism/method: with what it needs (on the source) and everything it
    reads (on the target); without each needed value; with each Secret name or key blank."""
    blanked: set[cr.Path_] = set()
    for who in whos():
        required, read, name = set(cr.verdict(who).required), _read(who), _name(who)
        yield name, [BASE, side_values("source", "source", who, required),
                     side_values("target", "target", who, read)]  # fmt: skip
        for path in sorted(required - {cr.PROTOCOL, cr.MECHANISM, cr.METHOD}):
            # The cluster blocks share their rules; auth.source and auth.target have their own.
            for side in sides.SIDES if path[0] == "auth" else ("source",):
                left = side_values(side, side, who, required - {path})
                yield f"{name} without {side} {'.'.join(path)}", [BASE, left]
        for row in (r for r in cr.ROWS if r.name in cr.verdict(who).reads):
            for key in (k for k in (row.secret, row.key) if k not in (row.when, (), *blanked)):
                blanked.add(key)
                blank = side_values("source", "source", who, read)
                _put(blank, cr.values_path("source", "source", key), "")
                yield f"{name} with blank {'.'.join(key)}", [BASE, blank]


def _unread() -> Iterator[Case]:
    """Each cluster value set where it is not read, once per protocol."""
    for when in dict.fromkeys(r.when for r in cr.ROWS if r.block == "cluster"):
        names = {r.name for r in cr.ROWS if r.when == when}
        for p in sides.PROTOCOLS:
            unread = (w for w in whos() if w[0] == p and cr.verdict(w).valid
                      and not names & cr.verdict(w).reads)  # fmt: skip
            who = next(unread, None)
            if who is not None:
                values = side_values("source", "source", who, {*cr.verdict(who).required, when})
                yield f"{'.'.join(when)} unread by {_name(who)}", [BASE, values]


def _samples() -> Iterator[Case]:
    """Bootstrap servers and whitelists, well and badly formed."""
    for servers in ("k:9092", " k:9092 , j:9093", "[::1]:9092", "k", ":9092", "k:90a",
                    "k:9092,", "k: 9092", ""):  # fmt: skip
        yield f"bootstrap {servers!r}", [BASE, {"source": {"bootstrapServers": servers}}]
    for topics in (".*", "", " ", ",", "' '"):
        yield f"whitelist {topics!r}", [BASE, {"whitelist": topics}]


def _kudo() -> Iterator[Case]:
    """KUDO's pair either way round: auth.<side> follows the block that plays the side."""
    methods = {w[2]: w for w in whos() if cr.METHOD in _read(w)}  # one per method
    for kind, blocks in cr.roles().items():
        for side in sides.SIDES if kind else ():
            kudo = {"thisCluster": {"bootstrapServers": "this.example.com:9092"},
                    "external": {"bootstrapServers": "ext.example.com:9092",
                                 "clusterType": kind}}  # fmt: skip
            for who in methods.values():
                name = f"{kind} {blocks[side]} as {side} {_name(who)}"
                yield name, [kudo, side_values(blocks[side], side, who, _read(who))]
                short = side_values(blocks[side], side, who, {cr.METHOD})
                yield f"{name} without settings", [kudo, short]


CASES = [
    *((f.name, f) for f in chartlib.ci_values_files() if "replicas-0" not in f.name),
    *((f"contract-{n}", v) for n, v in RENDERS if not isinstance(v, Path)),
    *_per_who(),
    *_unread(),
    *_samples(),
    *_kudo(),
]


def _merge(base: Any, over: Any) -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        return {k: _merge(base.get(k), over[k]) if k in over else base[k] for k in {**base, **over}}
    return over


def _merged(values: Any) -> Any:
    items = values if isinstance(values, list) else [values]
    merged: Any = VALUES
    for item in items:
        merged = _merge(
            merged, yaml.safe_load(item.read_text()) if isinstance(item, Path) else item
        )
    return merged


def chart_accepts(values: Any) -> tuple[bool, chartlib.Rendered]:
    """(the schema and the helper accept, the rendered manifests even when they do not)."""
    schema_ok = SCHEMA.is_valid(_merged(values))
    skip = ["--skip-schema-validation"]
    items = values if isinstance(values, list) else [values]
    try:
        return schema_ok, chartlib.helm_template(items, extra_args=skip)
    except chartlib.HelmError:  # the helper refused: no pod, but render one for the image
        return False, chartlib.helm_template([*items, {"replicaCount": 0}], extra_args=skip)


def image_accepts(docs: chartlib.Rendered, tmp: Path) -> tuple[bool, str]:
    """The mirror container's environment through the entrypoint's loader, strict, with the
    Secret keys as files. A Secret or key without a name never gets that far: Kubernetes
    refuses such a pod."""
    c = chartlib.container(docs.deployment, "mirror")
    mounted = chartlib.mounted_secret_files(docs.deployment, c)
    resolved = chartlib.resolve_env(c, docs)
    refs = [*mounted.values(), *(v for v in resolved.values() if isinstance(v, SecretRef))]
    unnamed = [r for r in refs if not (r.secret and r.key)]
    if unnamed:
        return False, f"Kubernetes refuses a Secret reference without a name: {unnamed}"
    files = {}
    for n, (path, ref) in enumerate(mounted.items()):
        files[path] = tmp / f"secret-{n}"
        files[path].write_text(f"{ref.key}-content\n")
    env: dict[str, str] = {}
    for name, value in resolved.items():
        if isinstance(value, SecretRef):
            env[name] = f"{value.key}-content"
        elif isinstance(value, FieldRef):
            env[name] = "pod-0"
        else:
            env[name] = str(files.get(value, value))
    env |= {"KMIRROR_STRICT": "true", "KMIRROR_CONFIG_DIR": str(tmp / "rendered")}
    try:
        plan_config(build_plan(env))
    except ConfigError as exc:
        return False, str(exc)
    return True, ""


@pytest.mark.parametrize(("name", "values"), CASES, ids=[c[0] for c in CASES])
def test_chart_accepts_exactly_what_the_image_accepts(
    name: str, values: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What IRSA and EKS Pod Identity put into the pod: the schema cannot see the pod's
    # environment (test_msk_iam_without_a_region_fails_at_start_naming_the_variable).
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    chart_ok, docs = chart_accepts(values)
    image_ok, why = image_accepts(docs, tmp_path)
    assert chart_ok == image_ok, f"{name}: chart {chart_ok}, image {image_ok} {why}"


def test_the_matrix_covers_every_rule() -> None:
    """Each generated rule of the schema refuses at least one combination of the matrix."""
    names = [n for n, _ in CASES]
    assert len(names) == len(set(names))
    refused = [_merged(v) for _, v in CASES if not SCHEMA.is_valid(_merged(v))]
    rules = [*SCHEMA.schema["allOf"], *SCHEMA.schema["definitions"]["cluster"]["allOf"]]
    for rule in rules:
        hit = False
        for values in refused:
            blocks = [values] if rule in SCHEMA.schema["allOf"] else [values[b] for b in BLOCKS]
            one = jsonschema.Draft7Validator({"allOf": [rule]})
            hit = hit or any(not one.is_valid(b) for b in blocks)
        assert hit, f"no combination breaks the rule {rule['$comment']}: {json.dumps(rule)[:300]}"


def test_msk_iam_without_a_region_fails_at_start_naming_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one rule the schema leaves to the image: AWS_MSK_IAM needs a region, from the broker
    host names, auth.aws.region or the pod's own AWS_REGION, which only the pod knows."""
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    iam = ("SASL_SSL", "AWS_MSK_IAM", "oidc")
    values = [{"source": {"bootstrapServers": "b-1.internal:9098"},
               "target": {"bootstrapServers": "t:9092"}},
              side_values("source", "source", iam, set())]  # fmt: skip
    chart_ok, docs = chart_accepts(values)
    image_ok, why = image_accepts(docs, tmp_path)
    assert chart_ok and not image_ok
    assert "*_AWS_REGION" in why and "auth.aws.region" in why, why
