"""The two things kmirror takes from a MirrorMaker log4j configuration (`--log4j-config`, e.g.
the seed's tools-log4j.properties): the root log level and the console ConversionPattern.
Appenders, per-logger levels and file output have no meaning here; logs go to stderr.
"""

from __future__ import annotations

from collections.abc import Mapping

from kmirror.config.dialects.properties import PropertiesFile, load_properties
from kmirror.config.values import unrendered
from kmirror.errors import ConfigError

LEVELS = ("TRACE", "DEBUG", "INFO", "WARN", "WARNING", "ERROR", "FATAL", "CRITICAL", "OFF")
# kmirror's own output formats (--log-format, KMIRROR_LOG_FORMAT); log4j has no say in them.
FORMATS = ("text", "json")


def read_log4j(path: str | PropertiesFile) -> tuple[str | None, str | None, list[str]]:
    """(root level, layout pattern, notes) from a log4j 1 or log4j 2 properties file (a path,
    or a file already in memory: the entrypoint's)."""
    if isinstance(path, PropertiesFile):
        props = dict(path.props)
    else:
        props = load_properties(path)
        unrendered({k: v for k, v in props.items() if "rootLogger" in k}, f"log4j config {path}")
    level, pattern = _log4j2(props) if _is_log4j2(props) else _log4j1(props)
    notes: list[str] = []
    if level is not None:
        level = check_level(level, f"root logger level in {path}")
    if level is None and pattern is None:
        notes.append(
            f"log4j config {path}: no root logger level or layout pattern found; "
            "kmirror's defaults are used"
        )
    return level, pattern, notes


def check_level(level: str, where: str) -> str:
    name = level.strip().upper()
    if name not in LEVELS:
        raise ConfigError(f"{where}: unknown log level {level!r}; use one of {', '.join(LEVELS)}")
    return name


def _is_log4j2(props: Mapping[str, str]) -> bool:
    return any(k.startswith(("rootLogger", "appender.", "appenders")) for k in props)


def _log4j1(props: Mapping[str, str]) -> tuple[str | None, str | None]:
    # log4j.rootLogger=INFO, stdout[, file]: the level, then the appender names.
    root = [p.strip() for p in props.get("log4j.rootLogger", "").split(",")]
    level = root[0] or None
    for appender in [*root[1:], *_appenders1(props)]:
        pattern = props.get(f"log4j.appender.{appender}.layout.ConversionPattern")
        if pattern:
            return level, pattern
    return level, None


def _appenders1(props: Mapping[str, str]) -> list[str]:
    prefix = "log4j.appender."
    return [k[len(prefix) :].split(".")[0] for k in props if k.startswith(prefix)]


def _log4j2(props: Mapping[str, str]) -> tuple[str | None, str | None]:
    level = props.get("rootLogger.level")
    if level is None and "rootLogger" in props:  # log4j 2.17+ shorthand: rootLogger=INFO, STDOUT
        level = props["rootLogger"].split(",")[0].strip() or None
    # Prefer the appender the root logger refers to (by its `name`), else the first pattern.
    refs = {v.strip() for k, v in props.items() if k.startswith("rootLogger.appenderRef.")}
    ids = sorted({k.split(".")[1] for k in props if k.startswith("appender.") and k.count(".") > 1})
    chosen = [i for i in ids if props.get(f"appender.{i}.name", "").strip() in refs] + ids
    for appender_id in chosen:
        pattern = props.get(f"appender.{appender_id}.layout.pattern")
        if pattern:
            return level, pattern
    return level, None
