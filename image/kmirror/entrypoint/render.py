"""From the container's environment to the configuration of a MirrorMaker 1 style run.

`build_plan` reads everything (an optional .env file, the KUDO variables, the templates, the
security variables, mounted secret files) and fails before anything is written or started; the
options (whitelist, streams, ...) come straight from the environment as typed `Options`.
`plan_config` hands the rendered files, still in memory, and the options to the loader: the
mirror gets the model `kmirror run --consumer.config ... --producer.config ... --whitelist ...`
would build from those files. `write_files` puts the files into a private directory, for
people to read and to rerun that command (`Plan.argv`); nothing reads them back.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TextIO

from dotenv import dotenv_values

from kmirror.config import env as envvars
from kmirror.config.dialects.kudo import security_from_env
from kmirror.config.dialects.loader import load_config
from kmirror.config.dialects.options import FIELDS, Options
from kmirror.config.dialects.properties import PropertiesFile
from kmirror.config.model import ConfValue, MirrorConfig
from kmirror.config.secret import Secret, is_secret_key, reveal, unseal
from kmirror.config.sides import BOOTSTRAP, SIDE_SUFFIXES, SOURCE, TARGET, Side, kudo_roles
from kmirror.config.values import enforce_strict, parse_bool, parse_int
from kmirror.entrypoint.templating import Expander, Rendered, expand_properties
from kmirror.errors import ConfigError

CONSUMER, PRODUCER, LOG4J = "consumer.properties", "producer.properties", "tools-log4j.properties"
TEMPLATES = (CONSUMER, PRODUCER, LOG4J)
# Which cluster's security variables and which extra-lines variable complete each client file.
_CLIENT_FILES: Mapping[str, tuple[Side, str]] = {
    CONSUMER: (SOURCE, "KMIRROR_EXTRA_CONSUMER_PROPERTIES"),
    PRODUCER: (TARGET, "KMIRROR_EXTRA_PRODUCER_PROPERTIES"),
}
# The options naming the configuration files: the entrypoint renders them.
_FILE_OPTIONS = {"consumer_config": CONSUMER, "producer_config": PRODUCER, "log4j_config": LOG4J}


@dataclass(frozen=True)
class Plan:
    """Everything the entrypoint will write and run. Printing it never shows a secret."""

    files: tuple[Rendered, ...]
    origins: Mapping[str, str]  # file name -> the template it was rendered from
    options: Options  # from the environment: the MirrorMaker 1 options besides the files
    config_dir: Path
    environ: Mapping[str, str]  # the process environment + the .env file + KUDO mapping
    dotenv: Mapping[str, str] = field(default_factory=dict)  # what the .env file added
    notes: tuple[str, ...] = ()

    def argv(self, directory: Path | None = None) -> list[str]:
        """The `kmirror run` command line that loads the written files into the same
        configuration (for people: logged, printed by `kmirror render`)."""
        d = self.config_dir if directory is None else directory
        files = Options(
            consumer_config=str(d / CONSUMER),
            producer_config=str(d / PRODUCER),
            log4j_config=str(d / LOG4J),
        )
        return ["run", *files.argv(), *self.options.argv()]

    def secrets(self) -> list[str]:
        """Every credential value, for the log redactor (the last line of defence)."""
        values = [v.reveal() for f in self.files for v in f.props.values() if isinstance(v, Secret)]
        values += [v for k, v in self.dotenv.items() if is_secret_key(k)]
        return [v for v in values if v]

    def file(self, name: str) -> Rendered:
        return next(f for f in self.files if f.name == name)


def build_plan(environ: Mapping[str, str]) -> Plan:
    """Resolve the whole configuration; raise ConfigError (exit 2) naming what is wrong."""
    notes: list[str] = []
    dotenv = load_env_file(environ, notes)
    env = {**dotenv, **environ}
    env.update(kudo_bootstrap(env, notes))
    expander = Expander(env)
    rendered: dict[str, dict[str, ConfValue]] = {}
    origins: dict[str, str] = {}
    for name, (text, origin) in templates(env, notes).items():
        origins[name] = origin
        rendered[name] = expand_properties(text, name, expander)
        extra_var = _CLIENT_FILES[name][1] if name in _CLIENT_FILES else None
        if extra_var and env.get(extra_var, "").strip():
            # Appended lines: they win over the template's.
            rendered[name].update(expand_properties(env[extra_var], extra_var, expander))
    expander.check()
    for name, (side, _) in _CLIENT_FILES.items():
        rendered[name] = _with_security(rendered[name], name, side, env, notes)
    files = tuple(Rendered(name, props) for name, props in rendered.items())
    for name, key, variable in (
        (CONSUMER, "bootstrap.servers", "SOURCE_CLUSTER_BOOTSTRAP_SERVERS"),
        (CONSUMER, "group.id", "SOURCE_CLUSTER_CONSUMER_GROUP"),
        (PRODUCER, "bootstrap.servers", "SINK_CLUSTER_BOOTSTRAP_SERVERS"),
    ):
        if not reveal(rendered[name].get(key, "")).strip():
            raise ConfigError(
                f"{name} renders an empty {key}: set {variable} (or fix the template)"
            )
    enforce_strict(notes, env)
    return Plan(
        files=files,
        origins=origins,
        options=mirror_options(env),
        config_dir=Path(envvars.get("KMIRROR_CONFIG_DIR", env)),
        environ=env,
        dotenv=dotenv,
        notes=tuple(notes),
    )


def load_env_file(environ: Mapping[str, str], notes: list[str]) -> dict[str, str]:
    """Variables of the optional .env file that the environment does not set itself (the
    environment wins, as with docker's --env-file and compose). `${VAR}` inside it expands
    against the environment and the lines above it; a missing variable is an error."""
    explicit = environ.get("KMIRROR_ENV_FILE", "").strip()
    path = explicit or envvars.get("KMIRROR_ENV_FILE", {})
    if not os.path.isfile(path):
        if explicit:
            raise ConfigError(f"KMIRROR_ENV_FILE names {path!r}, which is not a file")
        return {}
    try:
        raw = dotenv_values(path, interpolate=False, encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f".env file {path} cannot be read: {exc}") from exc
    loaded: dict[str, str] = {}
    for key, value in raw.items():
        if value is None:
            notes.append(f"{path}: {key!r} has no '=value'; ignored")
            continue
        expander = Expander({**loaded, **environ})
        expanded, _ = expander.expand(value, f"{path}: {key}")
        expander.check()
        if key in environ:
            notes.append(f"{path}: {key} ignored: the environment sets it")
        else:
            loaded[key] = expanded
    return loaded


def kudo_bootstrap(env: Mapping[str, str], notes: list[str]) -> dict[str, str]:
    """KUDO mode (MIRROR_MAKER_EXTERNAL_BOOTSTRAP_SERVERS set): the source and target
    bootstrap servers from this cluster, the external one and the external cluster's role."""
    external = env.get("MIRROR_MAKER_EXTERNAL_BOOTSTRAP_SERVERS", "").strip()
    if not external:
        if env.get("MIRROR_MAKER_THIS_BOOTSTRAP_SERVERS", "").strip():
            notes.append(
                "MIRROR_MAKER_THIS_BOOTSTRAP_SERVERS ignored: KUDO mode needs "
                "MIRROR_MAKER_EXTERNAL_BOOTSTRAP_SERVERS too"
            )
        return {}
    this = env.get("MIRROR_MAKER_THIS_BOOTSTRAP_SERVERS", "").strip()
    if not this:
        raise ConfigError(
            "MIRROR_MAKER_THIS_BOOTSTRAP_SERVERS is not set: KUDO mode "
            "(MIRROR_MAKER_EXTERNAL_BOOTSTRAP_SERVERS is set) needs the bootstrap servers of "
            "the cluster the mirror runs beside"
        )
    kind = env.get("MIRROR_MAKER_EXTERNAL_CLUSTER_TYPE", "").strip()
    source, sink = kudo_roles(this, external, kind)
    derived = {f"{SOURCE}_{BOOTSTRAP}": source, f"{TARGET}_{BOOTSTRAP}": sink}
    for name, value in derived.items():
        given = env.get(name, "").strip()
        if given and given != value:
            raise ConfigError(
                f"{name}={given!r} contradicts KUDO mode, which makes it {value!r} "
                f"(MIRROR_MAKER_EXTERNAL_CLUSTER_TYPE={kind}): unset one of them"
            )
    return derived


def templates(env: Mapping[str, str], notes: list[str]) -> dict[str, tuple[str, str]]:
    """name -> (template text, where it came from). KMIRROR_TEMPLATE_DIR replaces the built-in
    templates file by file; a file it lacks falls back to the built-in one."""
    directory = env.get("KMIRROR_TEMPLATE_DIR", "").strip()
    if directory and not os.path.isdir(directory):
        raise ConfigError(f"KMIRROR_TEMPLATE_DIR names {directory!r}, which is not a directory")
    out: dict[str, tuple[str, str]] = {}
    for name in TEMPLATES:
        path = Path(directory, name) if directory else None
        if path is not None and path.is_file():
            out[name] = (_read_text(path), str(path))
        else:  # the origin, logged with the rendered file, says so
            out[name] = (builtin_template(name), f"built-in {name}")
    if directory:
        # ConfigMap volumes hold ..data and timestamped dirs: not user files.
        stray = sorted(p for p in os.listdir(directory) if p not in TEMPLATES and p[0] != ".")
        if stray:
            notes.append(
                f"KMIRROR_TEMPLATE_DIR {directory}: {', '.join(stray)} ignored (templates are "
                f"{', '.join(TEMPLATES)})"
            )
    return out


def builtin_template(name: str) -> str:
    return resources.files("kmirror").joinpath("templates", name).read_text(encoding="utf-8")


def mirror_options(env: Mapping[str, str]) -> Options:
    """The MirrorMaker 1 options the environment gives, each checked here so an error names
    the variable."""

    def first(*names: str) -> tuple[str, str]:
        for name in names:
            if env.get(name, "").strip():
                return name, env[name].strip()
        return names[-1], envvars.get(names[-1], env)

    whitelist_var, whitelist = first("MIRROR_MAKER_TOPIC_WHITELIST", "WHITELISTED_TOPICS")
    if not whitelist.strip():
        raise ConfigError(f"{whitelist_var} is empty: give a regex such as '.*'")
    streams_var, streams = first("MIRROR_MAKER_NUM_STREAMS", "NUM_STREAMS")
    commit = "MIRROR_MAKER_OFFSET_COMMIT_INTERVAL"
    abort = "MIRROR_MAKER_ABORT_ON_SEND_FAILURE"
    return Options(
        whitelist=whitelist,
        num_streams=parse_int(streams, streams_var, minimum=1),
        offset_commit_interval_ms=parse_int(envvars.get(commit, env), commit, minimum=1),
        abort_on_send_failure=parse_bool(envvars.get(abort, env), abort),
        exactly_once=parse_bool(envvars.get("EXACTLY_ONCE", env), "EXACTLY_ONCE"),
        blacklist=envvars.get("BLACKLISTED_TOPICS", env).strip() or None,
    )


def plan_config(
    plan: Plan, flags: Options | None = None, directory: Path | None = None
) -> MirrorConfig:
    """The mirror's configuration: the rendered files, as `kmirror run` would load them from
    `directory` (the config dir by default; messages name the files there), with the options
    and then the flags given (the container's arguments, as `kmirror run` options) applied.
    Same errors, same warnings, same --strict as `kmirror run`."""
    flags = flags or Options()
    options = flags.over(plan.options)  # a flag wins over the environment
    d = plan.config_dir if directory is None else directory
    for dest, name in _FILE_OPTIONS.items():
        if getattr(flags, dest) is not None:
            flag = FIELDS[dest].metadata["flag"]
            raise ConfigError(
                f"{flag} cannot follow `kmirror entrypoint`: it renders {name} from the "
                f"environment. To run your own files, pass a command: `run {flag} FILE ...`"
            )

    def rendered(name: str) -> PropertiesFile:
        return PropertiesFile(str(d / name), unseal(plan.file(name).props))

    options = dataclasses.replace(
        options,
        consumer_config=rendered(CONSUMER),
        producer_config=rendered(PRODUCER),
        log4j_config=rendered(LOG4J),
    )
    return load_config(options, plan.environ)


def write_files(plan: Plan, directory: Path | None = None) -> Path:
    """Write the rendered files, readable by this user only (they hold credentials)."""
    target = plan.config_dir if directory is None else directory
    try:
        target.mkdir(mode=0o700, parents=True, exist_ok=True)
        for rendered in plan.files:
            tmp = target / f".{rendered.name}.tmp"
            with _private(tmp) as fh:
                fh.write(rendered.text())
            os.replace(tmp, target / rendered.name)
    except OSError as exc:
        raise ConfigError(
            f"cannot write the rendered configuration to {target} ({exc.strerror or exc}): "
            "point KMIRROR_CONFIG_DIR at a writable directory (the image declares /tmp as a "
            "volume; mount an emptyDir there with a read-only root filesystem)"
        ) from exc
    return target


@contextlib.contextmanager
def _private(path: Path) -> Iterator[TextIO]:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    os.fchmod(fd, 0o600)  # a leftover file of that name may have had wider permissions
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        yield fh


def _with_security(
    props: dict[str, ConfValue], name: str, side: Side, env: Mapping[str, str], notes: list[str]
) -> dict[str, ConfValue]:
    """A template that sets security.protocol owns its security settings; otherwise they come
    from the side's *_SECURITY_PROTOCOL / *_SASL_* / *_SSL_* variables."""
    if "security.protocol" in props:
        given = [f"{side}_{s}" for s in SIDE_SUFFIXES if env.get(f"{side}_{s}", "").strip()]
        if given:
            notes.append(f"{', '.join(given)} ignored: {name} sets security.protocol itself")
        return props
    security, sec_notes = security_from_env(side, env)
    notes += sec_notes
    merged: dict[str, ConfValue] = dict(props)
    for key, value in security.items():
        if key in props and str(props[key]) != str(value):
            notes.append(f"{name} sets {key}; the value from the {side}_* variables is ignored")
            continue
        merged[key] = value
    return merged


def _read_text(path: Path) -> str:
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")  # what Java reads .properties as
