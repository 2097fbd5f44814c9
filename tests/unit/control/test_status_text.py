"""What `kmirror status` prints about the running mirror's control state."""

from __future__ import annotations

from typing import Any

import pytest

from kmirror.cli.status import control_lines

pytestmark = pytest.mark.unit


def control(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "paused": [],
        "paused_at": {},
        "drain": None,
        "throttle": {"flow": {}, "topics": {}},
        "throttle_set_at_run_time": False,
        "applied": True,
    }
    return {**doc, **changes}


def drain(**changes: Any) -> dict[str, Any]:
    return {"id": "d1", "capturing": False, "complete": False, "records_left": 7, **changes}


def test_nothing_to_say_while_everything_is_copied() -> None:
    assert control_lines(control()) == []
    assert control_lines(None) == []  # read from the last commit: no control state


def test_paused_topics_and_a_drain_under_way_or_done() -> None:
    lines = control_lines(control(paused=["a", "b"], drain=drain(), applied=False))
    assert lines == [
        "paused: a, b",
        "draining (drain d1): 7 record(s) left",
        "(not every stream acts on this yet)",
    ]
    assert control_lines(control(drain=drain(capturing=True)))[0].startswith("capturing")
    done = control_lines(control(drain=drain(complete=True, records_left=0)))
    assert done[0].startswith("drained (drain d1): every partition committed")
