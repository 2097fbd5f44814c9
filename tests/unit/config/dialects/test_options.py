"""The options load_config takes: converted once from the command line's text (errors name the
flag), written back as the command line that loads the same configuration."""

from __future__ import annotations

import dataclasses

import pytest

from kmirror.config.dialects.options import Options
from kmirror.config.dialects.properties import PropertiesFile
from kmirror.errors import ConfigError
from tests.unit.config.conftest import parse

pytestmark = pytest.mark.unit


def test_flags_become_typed_options_and_absent_ones_stay_none() -> None:
    o = Options.from_flags(
        vars(
            parse(
                ["--num.streams", "3", "--abort.on.send.failure", "no", "--exactly-once",
                 "--refresh-topics-interval-s", "2.5", "--whitelist", " a|b ", "--group-id", " "]
            )
        )
    )  # fmt: skip
    assert (o.num_streams, o.abort_on_send_failure, o.exactly_once) == (3, False, True)
    assert (o.refresh_topics_interval_s, o.whitelist) == (2.5, "a|b")
    assert o.group_id is None and o.metrics_port is None and o.strict is False


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--num.streams", "0"], "--num.streams must be >= 1"),
        (["--metrics-port", "web"], "--metrics-port must be a whole number"),
        (["--abort.on.send.failure", "maybe"], "--abort.on.send.failure must be true or false"),
        (["--emit-checkpoints-interval-s", "-1"], "--emit-checkpoints-interval-s must be > 0"),
        (["--replication-factor", "-2"], "--replication-factor must be >= -1"),
    ],
)
def test_a_value_that_does_not_convert_names_its_flag(argv: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Options.from_flags(vars(parse(argv)))


def test_argv_loads_the_same_options() -> None:
    o = Options(
        consumer_config=PropertiesFile("/etc/c.properties", {}),
        whitelist="orders",
        num_streams=2,
        abort_on_send_failure=False,
        emit_checkpoints=True,
        sync_group_offsets_interval_s=30.0,
        exactly_once=True,
    )
    argv = o.argv()
    assert argv[:2] == ["--consumer.config", "/etc/c.properties"]
    assert "--exactly-once" in argv and argv[argv.index("--abort.on.send.failure") + 1] == "false"
    again = Options.from_flags(vars(parse(argv)))
    assert again == dataclasses.replace(o, consumer_config="/etc/c.properties")


def test_given_options_win_over_a_base_and_flags_name_the_dialects() -> None:
    base = Options(whitelist="a", num_streams=2, consumer_config="c")
    mine = Options(whitelist="b", mm2_config="mm2.properties", flow="x->y")
    merged = mine.over(base)
    assert (merged.whitelist, merged.num_streams, merged.consumer_config) == ("b", 2, "c")
    assert merged.flags("mm1") == ["--consumer.config"]
    assert merged.flags("mm2") == ["--mm2.config", "--flow"]
    assert merged.flags("kudo") == []
    # `false` is given (it wins); a switch that is off is not.
    off = Options(abort_on_send_failure=False, exactly_once=False)
    assert off.over(Options(abort_on_send_failure=True, exactly_once=True)) == Options(
        abort_on_send_failure=False, exactly_once=True
    )
