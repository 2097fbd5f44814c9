"""Templating of the container's config files: `${VAR}` / `${VAR:-default}` expanded with
python-dotenv's parser, then escaped into .properties syntax."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

import pytest

from kmirror.cli.envdocs import render_table
from kmirror.config.dialects.properties import parse_properties
from kmirror.config.env import BY_NAME
from kmirror.config.secret import Secret
from kmirror.entrypoint.render import TEMPLATES, load_env_file
from kmirror.entrypoint.templating import Expander, Rendered, expand_properties, placeholders
from kmirror.errors import ConfigError

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]

# Values that break naive templating: properties syntax, shell syntax, dotenv syntax.
NASTY = {
    "dollar": "pa$$word$1$HOME",
    "placeholder": "${NOT_EXPANDED} stays ${X:-literal}",
    "hash": "#not a comment",
    "bang": "!not a comment",
    "equals": "a=b=c",
    "colon": "host:9092,other:9093",
    "backslash": "C:\\dir\\n\\t\\\\end\\",
    "newlines": "line1\nline2\r\nline3\n",
    "spaces": "  leading and trailing  ",
    "unicode": "grüße \u2603 \U0001f600",
    "quotes": "'single' \"double\"",
    "unicode_escape": "\\u0041 is not A",
}


def render(text: str, environ: Mapping[str, str], where: str = "t.properties") -> dict[str, str]:
    """Expand, write as .properties, read back: what a client would see."""
    expander = Expander(environ)
    props = expand_properties(text, where, expander)
    expander.check()
    return parse_properties(Rendered(where, props).text())


# --------------------------------------------------------------------------- defaults


def test_value_then_template_default_then_documented_default() -> None:
    text = "a=${MY_VAR:-fallback}\nb=${NUM_STREAMS}\nc=${MY_VAR}\n"
    assert render(text, {"MY_VAR": "set"}) == {"a": "set", "b": "1", "c": "set"}
    assert render("a=${MY_VAR:-fallback}\nb=${NUM_STREAMS}\n", {}) == {"a": "fallback", "b": "1"}


def test_empty_counts_as_unset_like_posix() -> None:
    assert render("a=${MY_VAR:-d}\n", {"MY_VAR": ""}) == {"a": "d"}
    assert render("a=${MY_VAR:-}\n", {}) == {"a": ""}  # an explicit empty default is allowed


def test_template_default_wins_over_documented_default() -> None:
    assert render("n=${NUM_STREAMS:-4}\n", {}) == {"n": "4"}


def test_placeholders_inside_text_and_keys() -> None:
    env = {"HOST": "h", "PORT": "1", "PREFIX": "ssl"}
    text = "bootstrap.servers=PLAINTEXT://${HOST}:${PORT},${HOST}:2\n${PREFIX}.x=y\n"
    assert render(text, env) == {"bootstrap.servers": "PLAINTEXT://h:1,h:2", "ssl.x": "y"}


# --------------------------------------------------------------------------- missing


def test_missing_variable_is_an_error_naming_it() -> None:
    with pytest.raises(ConfigError) as err:
        render("bootstrap.servers=${SOURCE_CLUSTER_BOOTSTRAP_SERVERS}\n", {}, "consumer.properties")
    text = str(err.value)
    assert "SOURCE_CLUSTER_BOOTSTRAP_SERVERS" in text
    assert "consumer.properties: bootstrap.servers" in text
    assert BY_NAME["SOURCE_CLUSTER_BOOTSTRAP_SERVERS"].description in text


def test_every_missing_variable_is_named_at_once() -> None:
    with pytest.raises(ConfigError) as err:
        render("a=${ONE}\nb=${TWO}\nc=${ONE}\n", {"OTHER": "x"})
    assert "ONE, TWO" in str(err.value)


def test_empty_required_variable_is_missing_not_empty() -> None:
    with pytest.raises(ConfigError, match="SINK_CLUSTER_BOOTSTRAP_SERVERS"):
        render("b=${SINK_CLUSTER_BOOTSTRAP_SERVERS}\n", {"SINK_CLUSTER_BOOTSTRAP_SERVERS": ""})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a=${A:default}\n", "malformed placeholder '${A:default}'"),
        ("a=${A\n", "malformed placeholder"),
        ("a=${}\n", "invalid placeholder"),
        ("a=${1A}\n", "invalid placeholder"),
        ("a=$SOURCE_CLUSTER_BOOTSTRAP_SERVERS\n", "write ${SOURCE_CLUSTER_BOOTSTRAP_SERVERS}"),
        ("a=$MY_SET_VAR\n", "write ${MY_SET_VAR}"),
    ],
)
def test_template_syntax_errors(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        render(text, {"MY_SET_VAR": "x", "A": "x", "SOURCE_CLUSTER_BOOTSTRAP_SERVERS": "h:1"})
    assert message in str(err.value)


def test_dollar_in_literal_text_that_is_no_variable_is_kept() -> None:
    assert render("pattern=^orders$|pay$ments\n", {}) == {"pattern": "^orders$|pay$ments"}


# --------------------------------------------------------------------------- *_FILE


def test_file_variable_supplies_the_value_and_marks_it_secret(tmp_path: Path) -> None:
    secret = tmp_path / "password"
    secret.write_text("s3cr3t=#$\\x\n", encoding="utf-8")  # one trailing newline, as `echo` writes
    expander = Expander({"SOURCE_CLUSTER_SASL_PASSWORD_FILE": str(secret)})
    props = expand_properties(
        "sasl.password=${SOURCE_CLUSTER_SASL_PASSWORD}\n"
        "opaque=user:${SOURCE_CLUSTER_SASL_PASSWORD}\n",
        "t",
        expander,
    )
    expander.check()
    rendered = Rendered("t", props)
    assert all(isinstance(v, Secret) for v in props.values())  # even under an innocent key
    assert "s3cr3t" not in rendered.masked()
    assert parse_properties(rendered.text()) == {
        "sasl.password": "s3cr3t=#$\\x",
        "opaque": "user:s3cr3t=#$\\x",
    }
    assert expander.secrets == {"s3cr3t=#$\\x"}


def test_value_and_file_variable_together_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "p").write_text("x")
    env = {"X_PASSWORD": "a", "X_PASSWORD_FILE": str(tmp_path / "p")}
    with pytest.raises(ConfigError, match="X_PASSWORD and X_PASSWORD_FILE are both set"):
        render("p=${X_PASSWORD}\n", env)


def test_unreadable_secret_file_names_the_variable(tmp_path: Path) -> None:
    env = {"X_PASSWORD_FILE": str(tmp_path / "absent")}
    with pytest.raises(ConfigError, match=r"X_PASSWORD_FILE names .*absent.*cannot be read"):
        render("p=${X_PASSWORD}\n", env)


def test_variable_named_like_a_credential_is_masked() -> None:
    expander = Expander({"MY_TOKEN": "tok-123"})
    props = expand_properties("header=Bearer ${MY_TOKEN}\n", "t", expander)
    assert str(props["header"]) == "***"


# --------------------------------------------------------------------------- escaping


@pytest.mark.parametrize("name", sorted(NASTY))
def test_values_arrive_verbatim(name: str) -> None:
    value = NASTY[name]
    assert render("key=${V}\nk2=[${V}]\n", {"V": value}) == {"key": value, "k2": f"[{value}]"}


def test_template_escapes_are_resolved_before_expansion() -> None:
    # The template is .properties: its own escapes and continuation lines keep working.
    text = "a=x\\:y\\ ${V}\nlong=one,\\\n    ${V}\n"
    assert render(text, {"V": "v"}) == {"a": "x:y v", "long": "one,v"}


@pytest.mark.skipif(shutil.which("java") is None, reason="needs a JDK (java) on PATH")
def test_java_reads_the_rendered_values_verbatim(tmp_path: Path) -> None:
    """The rendered file is read by Java's Properties.load exactly as by our parser."""
    text = "".join(f"{name}=${{{name.upper()}}}\n" for name in NASTY)
    env = {name.upper(): value for name, value in NASTY.items()}
    expander = Expander(env)
    out = tmp_path / "rendered.properties"
    out.write_text(Rendered("t", expand_properties(text, "t", expander)).text(), encoding="utf-8")
    source = tmp_path / "Dump.java"
    source.write_text(
        "import java.io.*; import java.util.*;\n"
        "public class Dump { public static void main(String[] a) throws Exception {\n"
        "  Properties p = new Properties();\n"
        '  try (Reader r = new InputStreamReader(new FileInputStream(a[0]), "UTF-8")) '
        "{ p.load(r); }\n"
        '  PrintStream o = new PrintStream(System.out, true, "UTF-8");\n'
        "  for (String k : new TreeSet<>(p.stringPropertyNames())) {\n"
        "    o.print(k); o.print('\\0'); o.print(p.getProperty(k)); o.print('\\0'); }\n"
        "}}\n",
        encoding="utf-8",
    )
    run = subprocess.run(
        ["java", str(source), str(out)], capture_output=True, timeout=120, check=True
    )
    fields = run.stdout.decode("utf-8").split("\0")[:-1]
    assert dict(zip(fields[::2], fields[1::2], strict=True)) == NASTY


# --------------------------------------------------------------------------- .env


def test_env_file_fills_gaps_and_the_environment_wins(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text(
        "# comment\nA=from-file\nB=${A}-and-${C}\nC_DEFAULT=${NOPE:-d}\nQ='x # y'\n",
        encoding="utf-8",
    )
    notes: list[str] = []
    loaded = load_env_file({"KMIRROR_ENV_FILE": str(env_file), "C": "env", "A": "env-a"}, notes)
    assert loaded == {"B": "env-a-and-env", "C_DEFAULT": "d", "Q": "x # y"}
    assert any("A ignored" in n for n in notes)


def test_env_file_with_a_missing_variable_fails(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("B=${MISSING_ONE}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"MISSING_ONE \(used in .*\.env: B\)"):
        load_env_file({"KMIRROR_ENV_FILE": str(env_file)}, [])


def test_env_file_named_but_absent_fails_default_absent_is_fine(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="KMIRROR_ENV_FILE"):
        load_env_file({"KMIRROR_ENV_FILE": str(tmp_path / "nope")}, [])
    assert load_env_file({}, []) == {}  # /etc/kmirror/.env does not exist here


# --------------------------------------------------------------------------- the templates


@pytest.mark.parametrize("name", TEMPLATES)
def test_packaged_templates_are_the_config_templates(name: str) -> None:
    """One source of truth: the package's templates/ is config-templates/ (a symlink in the
    source tree; the wheel build copies the files)."""
    packaged = resources.files("kmirror").joinpath("templates", name).read_bytes()
    assert packaged == (REPO / "config-templates" / name).read_bytes()


@pytest.mark.parametrize("name", TEMPLATES)
def test_template_variables_are_documented_in_env_py(name: str) -> None:
    props = parse_properties((REPO / "config-templates" / name).read_text(encoding="utf-8"))
    found = [p for key, value in props.items() for p in placeholders(key + value)]
    assert found, f"{name} uses no variable"
    for var, default in found:
        assert var in BY_NAME, f"{name}: ${{{var}}} is not documented in kmirror/config/env.py"
        # Defaults live in env.py only, so docs/configuration.md tells the truth.
        assert default is None, f"{name}: ${{{var}:-{default}}} duplicates env.py's default"


def test_configuration_docs_are_generated_from_env_py() -> None:
    docs = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert render_table() in docs, "docs/configuration.md is stale: run `make env-docs`"
