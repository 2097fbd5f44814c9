"""The PrometheusRule: off by default; its rules load in Prometheus (`promtool check rules`), name
only metrics kmirror exports, and fire on the series they are about and not on healthy ones
(`promtool test rules`, with the rules exactly as the chart renders them)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.chart import chartlib, monitoring

pytestmark = pytest.mark.chart

SEL = {"namespace": chartlib.NAMESPACE, "job": chartlib.RELEASE}
HEARTBEAT_METRIC = "kmirror_dr_heartbeat_age_seconds"
ALL_ALERTS = {"heartbeatAge": {"enabled": True}}


def rule_values(minimal: dict[str, Any], **rule: Any) -> dict[str, Any]:
    alerts = {**ALL_ALERTS, **rule.pop("alerts", {})}
    return {
        **minimal,
        "serviceMonitor": {"enabled": True},
        "prometheusRule": {"enabled": True, "alerts": alerts, **rule},
    }


def rendered_groups(helm_template: Callable[..., Any], values: dict[str, Any]) -> Any:
    return helm_template(values).one("PrometheusRule")["spec"]["groups"]


def rules_by_alert(groups: Any) -> dict[str, dict[str, Any]]:
    return {r["alert"]: r for g in groups for r in g["rules"]}


def test_rules_are_off_by_default(
    helm_template: Callable[..., Any], minimal: dict[str, Any]
) -> None:
    assert not helm_template(minimal).has("PrometheusRule")


def test_rules_load_in_prometheus(
    helm_template: Callable[..., Any], minimal: dict[str, Any], tmp_path: Path
) -> None:
    groups = rendered_groups(helm_template, rule_values(minimal))
    path = tmp_path / "kmirror-rules.yaml"
    path.write_text(yaml.safe_dump({"groups": groups}))
    result = monitoring.promtool("check", "rules", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 5 rules found" in result.stdout
    assert set(rules_by_alert(groups)) == {
        "KmirrorLagGrowing", "KmirrorNoCommit", "KmirrorSendErrors", "KmirrorDown",
        "KmirrorHeartbeatStale",
    }  # fmt: skip


def test_rules_name_only_exported_metrics(
    helm_template: Callable[..., Any], minimal: dict[str, Any]
) -> None:
    """Heartbeats are being built: until kmirror exports their metric, its alert must stay off by
    default (values.yaml) -- once it is exported, this test checks that alert like the rest."""
    exported = monitoring.exported_series()
    groups = rendered_groups(helm_template, rule_values(minimal))
    problems = []
    for name, rule in rules_by_alert(groups).items():
        unknown = monitoring.unknown_references(rule["expr"])
        if name == "KmirrorHeartbeatStale" and HEARTBEAT_METRIC not in exported:
            # Its labels are unknown too while the metric is: only the metric is checked.
            assert [u for u in unknown if u.startswith("metric ")] == [
                f"metric {HEARTBEAT_METRIC}"
            ], unknown
            continue
        problems += [f"{name}: {p} is not exported" for p in unknown]
    assert not problems, "\n".join(problems)
    if HEARTBEAT_METRIC not in exported:
        default_rules = rendered_groups(
            helm_template,
            {
                **minimal,
                "serviceMonitor": {"enabled": True},
                "prometheusRule": {"enabled": True},
            },
        )
        assert "KmirrorHeartbeatStale" not in rules_by_alert(default_rules)


def test_selector_and_commit_interval_follow_the_values(
    helm_template: Callable[..., Any], minimal: dict[str, Any]
) -> None:
    values = rule_values(minimal, selector='job="mirror-a"', additionalLabels={"team": "data"})
    values["offsetCommitIntervalMs"] = 30000
    rules = rules_by_alert(rendered_groups(helm_template, values))
    assert (
        'kmirror_mirror_seconds_since_last_commit{job="mirror-a"}'
        in rules["KmirrorNoCommit"]["expr"]
    )
    assert "> 150" in rules["KmirrorNoCommit"]["expr"]  # 5 intervals of 30 s
    assert all(r["labels"]["team"] == "data" for r in rules.values())
    assert 'namespace="' not in "".join(r["expr"] for r in rules.values())


def test_a_mirror_scaled_to_zero_is_not_down(
    helm_template: Callable[..., Any], minimal: dict[str, Any]
) -> None:
    values = {**rule_values(minimal), "replicaCount": 0}
    rules = rules_by_alert(rendered_groups(helm_template, values))
    assert "KmirrorDown" not in rules and "KmirrorNoCommit" in rules


def test_rules_without_a_monitor_need_a_selector(
    helm_template: Callable[..., Any], minimal: dict[str, Any]
) -> None:
    err = helm_template({**minimal, "prometheusRule": {"enabled": True}}, expect_fail=True)
    assert "kmirror: prometheusRule.selector" in err and "serviceMonitor.enabled" in err


# --------------------------------------------------------------------------- promtool tests


def labels(**kw: str) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in {**SEL, **kw}.items()) + "}"


def series(metric: str, values: str, **kw: str) -> dict[str, str]:
    return {"series": metric + labels(**kw), "values": values}


def sawtooth(step: int, per_commit: int, samples: int) -> str:
    """Lag of a healthy mirror scraped every 15 s: it climbs by `step` records per scrape and
    falls back to 0 at every commit (every `per_commit` scrapes)."""
    return " ".join(str(step * (i % per_commit)) for i in range(samples))


STREAM = {"instance": "10.0.0.7:9404", "stream": "0"}


def alert(name: str, **kw: str) -> dict[str, Any]:
    return {"exp_labels": {**SEL, **kw}}


def case(at: str, name: str, *alerts: dict[str, Any]) -> dict[str, Any]:
    return {"eval_time": at, "alertname": name, "exp_alerts": list(alerts)}


def promtool_tests() -> list[dict[str, Any]]:
    lag = "kmirror_mirror_lag_records"
    since = "kmirror_mirror_seconds_since_last_commit"
    errors = "kmirror_mirror_send_errors_total"
    p0 = {**STREAM, "topic": "orders", "partition": "0"}
    p1 = {**STREAM, "topic": "orders", "partition": "1"}
    lag_alert = alert("KmirrorLagGrowing", topic="orders", severity="warning")
    stuck = {**STREAM, "severity": "critical"}
    refused = alert("KmirrorSendErrors", error="MSG_SIZE_TOO_LARGE", severity="critical")
    old = alert("KmirrorSendErrors", error="OLD", severity="critical")
    return [
        {  # A partition whose lag rises steadily fires after `for`; the healthy one never does.
            "interval": "15s",
            "input_series": [
                series(lag, "0+100x160", **p0),
                series(lag, sawtooth(250, 4, 161), **p1),
            ],
            "alert_rule_test": [
                case("10m", "KmirrorLagGrowing"),  # pending: rising for less than 15m
                case("25m", "KmirrorLagGrowing", lag_alert),
                case("40m", "KmirrorLagGrowing", lag_alert),
            ],
        },
        {  # Healthy at a high rate: big saw-tooth, lag back to 0 at each commit. Never fires.
            "interval": "15s",
            "input_series": [series(lag, sawtooth(50000, 4, 241), **p0)],
            "alert_rule_test": [
                case("30m", "KmirrorLagGrowing"),
                case("60m", "KmirrorLagGrowing"),
            ],
        },
        {  # No commit while records wait: fires after 5 intervals (300 s) + for 1m.
            "interval": "15s",
            "input_series": [
                series(since, "0+15x60", **STREAM),
                series(lag, "500x60", **p0),
            ],
            "alert_rule_test": [
                case("4m", "KmirrorNoCommit"),
                case("7m", "KmirrorNoCommit", {"exp_labels": {**SEL, **stuck}}),
            ],
        },
        {  # An idle stream has nothing to commit: its clock runs, but the alert stays quiet.
            "interval": "15s",
            "input_series": [
                series(since, "0+15x80", **STREAM),
                series(lag, "0x80", **p0),
            ],
            "alert_rule_test": [case("15m", "KmirrorNoCommit")],
        },
        {  # A new error series (the stream exited after its first refused record) fires at
            # once and for the window; errors older than the window do not (a counter that
            # Prometheus has seen for less than the window counts as new).
            "interval": "15s",
            "input_series": [
                series(errors, "_x20 3x80", **STREAM, error="MSG_SIZE_TOO_LARGE"),
                series(errors, "2x100", instance="10.0.0.8:9404", stream="0", error="OLD"),
            ],
            "alert_rule_test": [
                case("4m", "KmirrorSendErrors", old),
                case("6m", "KmirrorSendErrors", refused, old),
                case("14m", "KmirrorSendErrors", refused),
                case("20m", "KmirrorSendErrors"),
            ],
        },
        {  # A counter that keeps rising (abortOnSendFailure: false retries) keeps firing.
            "interval": "15s",
            "input_series": [series(errors, "0x20 1+1x80", **STREAM, error="MSG_SIZE_TOO_LARGE")],
            "alert_rule_test": [
                case("4m", "KmirrorSendErrors"),
                case("20m", "KmirrorSendErrors", refused),
            ],
        },
        {  # Every pod down for 5m, or no pod scraped at all: KmirrorDown.
            "interval": "15s",
            "input_series": [
                series("up", "1x20 0x60", instance="10.0.0.7:9404"),
                series("up", "1x20 0x60", instance="10.0.0.8:9404"),
            ],
            "alert_rule_test": [
                case("4m", "KmirrorDown"),
                case("8m", "KmirrorDown"),  # down for 3m: pending
                case("12m", "KmirrorDown", alert("KmirrorDown", severity="critical")),
            ],
        },
        {  # One of two pods down is not "the mirror is down".
            "interval": "15s",
            "input_series": [
                series("up", "1x80", instance="10.0.0.7:9404"),
                series("up", "0x80", instance="10.0.0.8:9404"),
            ],
            "alert_rule_test": [case("15m", "KmirrorDown")],
        },
        {  # Nothing scraped for this release (never scheduled, not scraped).
            "interval": "15s",
            "input_series": [series("up", "1x80", job="another-release")],
            "alert_rule_test": [
                case("15m", "KmirrorDown", alert("KmirrorDown", severity="critical")),
            ],
        },
        {  # The newest heartbeat ages past 300 s (replication stalled end to end).
            "interval": "15s",
            "input_series": [
                series(HEARTBEAT_METRIC, "5x20 5+15x60", instance="10.0.0.7:9404"),
            ],
            "alert_rule_test": [
                case("5m", "KmirrorHeartbeatStale"),
                case(
                    "16m",
                    "KmirrorHeartbeatStale",
                    alert("KmirrorHeartbeatStale", severity="warning"),
                ),
            ],
        },
    ]


def test_alerts_fire_on_trouble_and_stay_quiet_when_healthy(
    helm_template: Callable[..., Any], minimal: dict[str, Any], tmp_path: Path
) -> None:
    groups = rendered_groups(helm_template, rule_values(minimal))
    # promtool compares annotations too; their templates are checked by `promtool check rules`
    # above, the behaviour here.
    for group in groups:
        for rule in group["rules"]:
            rule.pop("annotations", None)
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}))
    tests = {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": promtool_tests()}
    (tmp_path / "rules.test.yaml").write_text(yaml.safe_dump(tests, sort_keys=False))
    result = monitoring.promtool("test", "rules", "rules.test.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
