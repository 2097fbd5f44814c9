"""Topic mapping rules: the explicit map, regex rules with back-references, the policy around
them, the way back, and the refusals (two topics onto one, loops, malformed rules)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kmirror.config.model import ClusterConfig, MirrorConfig, RenamePolicy, TopicSelection
from kmirror.config.topicmap import TopicMapping, TopicRule, parse_map, parse_rules
from kmirror.config.topics import check_names
from kmirror.errors import ConfigError, TopicError
from tests.unit.config.conftest import load

pytestmark = pytest.mark.unit

Write = Callable[[str, str], str]
RULES = r"^team-a\.(.*)$ -> a.$1; ^legacy-(?P<rest>.*)$ -> new.${rest}; ^x-(.*)-(.*)$ -> \2.\1"


def mapping(map_text: str = "", rules: str = "", prefixed: bool = False) -> TopicMapping:
    return TopicMapping(parse_map(map_text, "t"), parse_rules(rules, "t"), prefixed)


def test_map_then_rules_in_order_then_the_policy() -> None:
    rename = RenamePolicy(mapping=mapping("orders:shop.orders.v2, team-a.special:special", RULES))
    assert rename.explain("orders") == ("shop.orders.v2", "map")
    assert rename.explain("team-a.special") == ("special", "map")  # the map wins over rule 1
    assert rename.explain("team-a.billing") == ("a.billing", "rule 1")
    assert rename.explain("legacy-payments") == ("new.payments", "rule 2")
    assert rename.explain("x-eu-clicks") == ("clicks.eu", "rule 3")
    assert rename.explain("other") == ("other", "identity")
    # A rule matches the whole name, not a part of it.
    assert rename.explain("my-team-a.billing") == ("my-team-a.billing", "identity")


def test_prefix_policy_alone_or_around_mapped_names() -> None:
    instead = RenamePolicy(kind="prefix", source_alias="A", mapping=mapping("orders:shop.orders"))
    assert instead.target_topic("orders") == "shop.orders"
    assert instead.target_topic("payments") == "A.payments"
    around = RenamePolicy(kind="prefix", source_alias="A", mapping=mapping("orders:o", "", True))
    assert around.explain("orders") == ("A.o", "map + prefix")


def test_heartbeats_never_follow_the_rules() -> None:
    rename = RenamePolicy(heartbeats=True, mapping=mapping("heartbeats:hb", r"^(.*)$ -> m.$1"))
    assert rename.target_topic("heartbeats") == "source.heartbeats"
    assert rename.target_topic("B.heartbeats") == "source.B.heartbeats"


def test_the_way_back_among_candidates() -> None:
    rename = RenamePolicy(kind="prefix", source_alias="A", mapping=mapping("orders:o", RULES))
    sources = ["orders", "team-a.billing", "payments"]
    assert rename.source_topic("o", sources) == "orders"
    assert rename.source_topic("a.billing", sources) == "team-a.billing"
    assert rename.source_topic("A.payments", sources) == "payments"
    assert rename.source_topic("payments", sources) is None


def test_check_names_refuses_two_topics_onto_one_naming_both() -> None:
    rename = RenamePolicy(mapping=mapping("", r"^(?:eu|us)-(.*)$ -> $1"))
    with pytest.raises(TopicError, match="eu-orders and us-orders both map to the target topic"):
        check_names(TopicSelection(), rename, ["eu-orders", "us-orders", "other"])
    # A mapped name onto a topic that keeps its own name collides too.
    rename = RenamePolicy(mapping=mapping("old-orders:orders"))
    with pytest.raises(TopicError, match="old-orders and orders both map"):
        check_names(TopicSelection(), rename, ["orders", "old-orders"])
    # Excluded topics do not count.
    names = check_names(TopicSelection(exclude=("orders",)), rename, ["orders", "old-orders"])
    assert names == {"old-orders": "orders"}


def test_check_names_refuses_a_rule_that_writes_into_what_it_renames() -> None:
    rename = RenamePolicy(mapping=mapping("", r"^(.*)$ -> mirror.$1"))
    with pytest.raises(TopicError, match=r"loop: rule 1 maps orders to mirror.orders.*"
                       r"mirror.orders on to mirror.mirror.orders"):  # fmt: skip
        check_names(TopicSelection(), rename, ["orders"])
    # Anchored so its output no longer matches: accepted.
    rename = RenamePolicy(mapping=mapping("", r"^(?!mirror\.)(.*)$ -> mirror.$1"))
    assert check_names(TopicSelection(), rename, ["orders"]) == {"orders": "mirror.orders"}


def test_check_names_same_cluster_and_reserved_names() -> None:
    rename = RenamePolicy(mapping=mapping("orders:orders.v2"))
    with pytest.raises(TopicError, match=r"same cluster and orders maps to orders\.v2"):
        check_names(TopicSelection(), rename, ["orders"], same_cluster=True)
    assert check_names(TopicSelection(include=("orders",)), rename, ["orders"], same_cluster=True)
    with pytest.raises(TopicError, match="one of kmirror's own topics"):
        check_names(TopicSelection(), rename, ["orders"], reserved=["orders.v2"])


def test_mirror_config_target_names_knows_its_own_topics() -> None:
    config = MirrorConfig(
        source=ClusterConfig("source", "a:1"),
        target=ClusterConfig("target", "b:1"),
        group_id="g",
        rename=RenamePolicy(mapping=mapping("x:kmirror-progress.g.internal")),
    )
    with pytest.raises(TopicError, match="kmirror's own topics"):
        config.target_names(["x"])


@pytest.mark.parametrize(
    ("rules", "fragment"),
    [
        ("orders", "malformed topic rule 'orders'"),
        ("^(orders -> x", "invalid regex '^(orders'"),
        ("^(.*)$ -> $2", "refers to group 2, but the regex has 1 group(s)"),
        ("^(.*)$ -> ${name}", "refers to group 'name', which the regex does not name"),
        ("^(.*)$ -> a b", "contains ' ', which no topic name may hold"),
        ("^(.*)$ -> ", "malformed topic rule"),
    ],
)
def test_malformed_rules_name_the_fix(rules: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as exc:
        parse_rules(rules, "--topic-rules")
    assert fragment in str(exc.value)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("orders", "malformed topic map entry 'orders'"),
        ("orders:a:b", "malformed topic map entry 'orders:a:b'"),
        ("orders:shop orders", "'shop orders' is not a valid topic name"),
        ("a:x, b:x", "sends both a and b to x"),
        ("a:x, a:y", "names a twice"),
    ],
)
def test_malformed_maps_name_the_fix(text: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as exc:
        TopicMapping(parse_map(text, "--topic-map"))
    assert fragment in str(exc.value)


def test_a_rule_producing_an_invalid_name_is_refused_when_it_applies() -> None:
    rule = TopicRule(r"^(.*)$", "$1" + "x" * 249)
    with pytest.raises(ConfigError, match="is not a valid topic name"):
        TopicMapping(rules=(rule,)).name("orders")


# -- every dialect ----------------------------------------------------------------------------

MM2 = "clusters=A, B\nA.bootstrap.servers=a:1\nB.bootstrap.servers=b:1\nA->B.enabled=true\n"


def test_mm2_keys_flow_specific_win(write: Write) -> None:
    path = write(
        "m.properties",
        MM2 + "kmirror.topic.map=orders:general\nA->B.kmirror.topic.map=orders:shop.orders\n"
        "A->B.kmirror.topic.rules=^team-a\\\\.(.*)$ -> a.$1\nkmirror.topic.mapping.prefix=true\n",
    )
    config = load(["--mm2.config", path])
    assert config.target_topic("orders") == "A.shop.orders"  # DefaultReplicationPolicy + prefix
    assert config.target_topic("team-a.x") == "A.a.x"
    assert config.target_topic("other") == "A.other"
    assert not any("kmirror.topic" in n for n in config.notes)


def test_mm1_flags_and_env(write: Write) -> None:
    c = write("c.properties", "bootstrap.servers=s:1\ngroup.id=g\n")
    p = write("p.properties", "bootstrap.servers=t:1\n")
    argv = ["--consumer.config", c, "--producer.config", p, "--whitelist", ".*"]
    env = {"KMIRROR_TOPIC_MAP": "orders:from-env", "KMIRROR_TOPIC_RULES": r"^t-(.*)$ -> $1"}
    config = load([*argv, "--topic-map", "orders:from-flag"], env)
    assert config.target_topic("orders") == "from-flag"  # the flag wins over the variable
    assert config.target_topic("t-x") == "x"  # the variable where no flag is given
    config = load([*argv, "--rename-policy", "prefix", "--topic-mapping-prefix", "true"], env)
    assert config.target_topic("orders") == "source.from-env"


def test_kudo_flags(write: Write) -> None:
    argv = ["--this-bootstrap-servers", "a:1", "--external-bootstrap-servers", "b:1",
            "--external-cluster-type", "SOURCE",
            "--topic-rules", r"^(.*)\.v1$ -> $1.v2"]  # fmt: skip
    assert load(argv).target_topic("orders.v1") == "orders.v2"


def test_bad_flag_names_the_flag(write: Write) -> None:
    argv = ["--this-bootstrap-servers", "a:1", "--external-bootstrap-servers", "b:1",
            "--external-cluster-type", "SOURCE", "--topic-map", "orders=shop"]  # fmt: skip
    with pytest.raises(ConfigError, match="--topic-map: malformed topic map entry"):
        load(argv)
    with pytest.raises(ConfigError, match="KMIRROR_TOPIC_RULES: malformed topic rule"):
        load(argv[:-2], {"KMIRROR_TOPIC_RULES": "nothing"})
