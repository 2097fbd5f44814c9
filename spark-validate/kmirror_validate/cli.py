"""`kmirror-validate`: prove that the target holds an exact copy of the source.

Exit codes: 0 the copy matches, 1 it does not (the report says where), 2 validation could not
run (bad configuration, a cluster unreachable, Spark failed). The JSON report goes to stdout
(--json) and/or a file (--json-out); the human summary and progress go to stderr.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kmirror.cli.flags import add_config_arguments, options_from
from kmirror.config.describe import describe
from kmirror.config.dialects.loader import load_config
from kmirror.config.model import MirrorConfig, TopicSelection, split_patterns
from kmirror.errors import ClusterError, ConfigError, KmirrorError
from kmirror.logsetup import configure, python_level
from kmirror_validate import __version__, ranges, sparkio
from kmirror_validate.progress import Progress
from kmirror_validate.report import error_document
from kmirror_validate.validate import Options, prepare, run

if TYPE_CHECKING:
    from kmirror_validate.report import Report

log = logging.getLogger("kmirror_validate")

EXIT_OK, EXIT_MISMATCH, EXIT_ERROR = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kmirror-validate",
        description="Compare the source and target clusters of a mirror record by record "
        "(count, digest or sample mode) with Spark. Exit 0: match, 1: mismatch, 2: could not "
        "validate.",
    )
    parser.add_argument("--version", action="version", version=f"kmirror-validate {__version__}")
    direct = parser.add_argument_group(
        "direct connection (instead of a dialect below; security from SOURCE_CLUSTER_* and "
        "SINK_CLUSTER_* environment variables)"
    )
    direct.add_argument("--source-bootstrap-servers", metavar="HOST:PORT[,...]")
    direct.add_argument("--target-bootstrap-servers", metavar="HOST:PORT[,...]")
    add_config_arguments(parser)

    v = parser.add_argument_group("validation")
    v.add_argument("--topics", metavar="REGEX",
                   help="validate these topics (regex or comma list of source names, or of their "
                   "target names through the mirror's topic mapping); default: the mirror's "
                   "topic selection")  # fmt: skip
    v.add_argument("--mode", choices=("count", "digest", "sample"), default="digest",
                   help="count: record counts only; digest (default): every record; sample: "
                   "a content-chosen fraction of the records")  # fmt: skip
    v.add_argument(
        "--sample-fraction",
        type=float,
        default=0.01,
        metavar="F",
        help="share of records compared in sample mode, 0 < F <= 1 (default 0.01)",
    )
    v.add_argument("--isolation-level", choices=("read_committed", "read_uncommitted"),
                   default="read_committed",
                   help="read_committed (default): aborted transactions and control records "
                   "are not counted")  # fmt: skip
    v.add_argument("--wait-timeout", type=float, default=0.0, metavar="SECONDS",
                   help="wait up to this long for the target to catch up with the source "
                   "snapshot before comparing (default 0: compare at once)")  # fmt: skip
    v.add_argument(
        "--max-examples",
        type=int,
        default=10,
        metavar="N",
        help="example offsets per problem kind and partition (default 10)",
    )
    v.add_argument("--duplicates", choices=("allow", "fail"), default="allow",
                   help="allow (default; an at-least-once mirror): duplicates of otherwise "
                   "complete, ordered records are reported but pass; fail (an exactly-once "
                   "mirror): any duplicate is a mismatch")  # fmt: skip
    v.add_argument("--from", dest="start", choices=("auto", "earliest", "mirror"),
                   default="auto",
                   help="where each partition's range starts: mirror = where the mirror "
                   "started copying it (its progress record on the target), earliest, or "
                   "auto (default: mirror where a progress record exists)")  # fmt: skip
    v.add_argument("--since", metavar="TIME",
                   help="only records with timestamps >= TIME: ISO 8601 (2026-11-26T10:00Z), "
                   "epoch ms, or a duration back from now (15m, 2h, 1d)")  # fmt: skip
    v.add_argument("--to", choices=("end", "copied"), default="end",
                   help="where each range ends: end (default: the source's end) or copied "
                   "(what the mirror has copied: its progress record, else its committed "
                   "offset; never waits for a backlog)")  # fmt: skip
    v.add_argument("--last", type=int, metavar="N",
                   help="only the last N records of each source partition")  # fmt: skip
    v.add_argument("--compacted", choices=("latest", "records"), default="latest",
                   help="compacted topics: compare the latest record per key (default) or "
                   "every record")  # fmt: skip
    v.add_argument(
        "--records-per-task",
        type=int,
        default=1_000_000,
        metavar="N",
        help="split Kafka partitions larger than this into several Spark tasks",
    )
    v.add_argument(
        "--connect-timeout",
        type=float,
        default=15.0,
        metavar="SECONDS",
        help="per-request timeout for metadata and offset lookups (default 15)",
    )

    out = parser.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="write the JSON report to stdout")
    out.add_argument("--json-out", metavar="FILE", help="write the JSON report to FILE")
    out.add_argument("--quiet", action="store_true", help="no human summary on stderr")
    out.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    out.add_argument(
        "--progress-interval",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="seconds between progress lines when stderr is not a terminal",
    )

    s = parser.add_argument_group("spark")
    s.add_argument(
        "--master",
        help="Spark master (default local[*]; spark-submit's when "
        "run by spark-submit), e.g. spark://host:7077 or k8s://https://api:6443",
    )
    s.add_argument(
        "--spark-conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra Spark setting (repeatable), e.g. spark.executor.instances=4",
    )
    s.add_argument(
        "--spark-log-level",
        default="WARN",
        metavar="LEVEL",
        help="Spark's log level (default WARN)",
    )
    return parser


def load(args: argparse.Namespace) -> MirrorConfig:
    """The mirror's config: a dialect via the shared loader, or the direct flags (the two
    clusters as they are, security from the SOURCE_CLUSTER_* / SINK_CLUSTER_* variables)."""
    src, tgt = args.source_bootstrap_servers, args.target_bootstrap_servers
    given = options_from(args)
    if src is None and tgt is None:
        return load_config(given)
    if not (src and tgt):
        raise ConfigError(
            "give both --source-bootstrap-servers and --target-bootstrap-servers (or neither "
            "and a dialect: --consumer.config/--producer.config, --mm2.config or KUDO flags)"
        )
    mixed = [flag for dialect in ("mm1", "mm2", "kudo") for flag in given.flags(dialect)]
    if mixed:
        flags = ", ".join(mixed)
        raise ConfigError(f"--source/--target-bootstrap-servers cannot be combined with {flags}")
    return load_config(given, clusters=(src, tgt))


def options(args: argparse.Namespace) -> Options:
    if not 0 < args.sample_fraction <= 1:
        raise ConfigError(f"--sample-fraction must be in (0, 1], not {args.sample_fraction}")
    for name in ("max_examples", "records_per_task"):
        if getattr(args, name) < (0 if name == "max_examples" else 1):
            raise ConfigError(f"--{name.replace('_', '-')} is out of range")
    if args.wait_timeout < 0 or args.connect_timeout <= 0:
        raise ConfigError("--wait-timeout must be >= 0 and --connect-timeout > 0")
    if args.last is not None and args.last < 1:
        raise ConfigError(f"--last must be >= 1, not {args.last}")
    bounds = ranges.Bounds(
        start=args.start,
        since_ms=ranges.parse_since(args.since) if args.since else None,
        last=args.last,
        to=args.to,
    )
    return Options(
        bounds=bounds,
        mode=args.mode,
        sample_fraction=args.sample_fraction,
        isolation=args.isolation_level,
        max_examples=args.max_examples,
        wait_timeout=args.wait_timeout,
        connect_timeout=args.connect_timeout,
        records_per_task=args.records_per_task,
        compacted=args.compacted,
        duplicates=args.duplicates,
    )


def spark_conf(pairs: Sequence[str]) -> dict[str, str]:
    conf: dict[str, str] = {}
    for item in pairs:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--spark-conf takes KEY=VALUE, not {item!r}")
        conf[key.strip()] = value
    return conf


def _setup_logging(args: argparse.Namespace) -> None:
    level = args.log_level or os.environ.get("LOG_LEVEL") or "WARNING"
    configure(level, pattern="%p %c: %m", replace=False)
    # py4j's DEBUG output is a protocol trace of every call into Spark, option values
    # included: the kafka.sasl.jaas.config password would be printed. Never below INFO, and
    # no more than asked for: its INFO lines are connection chatter, some logged by
    # finalizers at interpreter exit.
    logging.getLogger("py4j").setLevel(max(python_level(level), logging.INFO))
    # Our error messages already say why a cluster is unreachable; librdkafka would repeat
    # it for every connection attempt.
    if python_level(level) != logging.DEBUG:
        logging.getLogger("kmirror_validate.librdkafka").setLevel(logging.CRITICAL)


def _emit(args: argparse.Namespace, text: str) -> None:
    if args.json_out:
        Path(args.json_out).write_text(text, encoding="utf-8")
    if args.json:
        sys.stdout.write(text)
        sys.stdout.flush()


def _fail(args: argparse.Namespace, kind: str, message: str) -> int:
    print(f"kmirror-validate: error: {message}", file=sys.stderr)
    try:
        _emit(args, error_document(kind, message))
    except OSError as exc:
        print(f"kmirror-validate: cannot write {args.json_out}: {exc}", file=sys.stderr)
    return EXIT_ERROR


def _spark_message(exc: BaseException) -> str:
    text = str(getattr(exc, "desc", None) or exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def validate(args: argparse.Namespace) -> Report:
    config = load(args)
    opts = options(args)
    extra_conf = spark_conf(args.spark_conf)
    log.info("configuration:\n%s", describe(config))
    for note in config.notes:
        log.warning("%s", note)
    selection = None
    if args.topics:
        selection = TopicSelection(include=split_patterns(args.topics),
                                   exclude=config.topics.exclude)  # fmt: skip
    last = [0.0]

    def on_wait(lagging: list[str], waited: float) -> None:
        if time.monotonic() - last[0] >= min(10.0, args.progress_interval):
            last[0] = time.monotonic()
            print(f"[kmirror-validate] waiting for the target ({waited:.0f}s): "
                  f"{len(lagging)} behind, e.g. {', '.join(lagging[:3])}",
                  file=sys.stderr)  # fmt: skip

    prep = prepare(config, opts, selection, on_wait=None if args.no_progress else on_wait)
    from pyspark.sql import SparkSession

    existing = SparkSession.getActiveSession()
    spark = sparkio.build_session(args.master, sparkio.connector_jars(), extra_conf,
                                  log_level=args.spark_log_level)  # fmt: skip
    try:
        with Progress(spark, args.progress_interval, enabled=not args.no_progress) as progress:
            return run(spark, prep, progress)
    finally:
        if existing is None:
            spark.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _setup_logging(args)
    try:
        report = validate(args)
    except KmirrorError as exc:
        return _fail(args, type(exc).__name__, str(exc))
    except KeyboardInterrupt:
        return _fail(args, "Interrupted", "interrupted")
    except Exception as exc:
        module = type(exc).__module__
        if module.startswith(("pyspark", "py4j")):
            err = ClusterError(f"the Spark job failed: {_spark_message(exc)}")
            return _fail(args, "SparkError", str(err))
        traceback.print_exc()
        return _fail(args, type(exc).__name__, f"internal error: {exc}")
    try:
        _emit(args, report.dumps())
    except OSError as exc:
        return _fail(args, "OSError", f"cannot write the report to {args.json_out}: {exc}")
    if not args.quiet:
        print(report.summary(), file=sys.stderr)
    return EXIT_OK if report.ok else EXIT_MISMATCH


def entry() -> None:
    sys.exit(main())


if __name__ == "__main__":
    entry()
