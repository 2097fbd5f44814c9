"""Reading a /metrics page in tests: samples by name and by the labels a test cares about,
whatever other labels (the supervisor adds `flow`) they carry, in whatever order."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families


def sample(text: str, name: str, **labels: str) -> float | None:
    """The value of the first sample called `name` whose labels include `labels`."""
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and labels.items() <= s.labels.items():
                return float(s.value)
    return None
