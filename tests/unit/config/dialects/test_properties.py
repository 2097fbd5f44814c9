from __future__ import annotations

from pathlib import Path

import pytest

from kmirror.config.dialects.properties import dump_properties, load_properties, parse_properties
from kmirror.errors import ConfigError

pytestmark = pytest.mark.unit


def test_separators_equals_colon_and_whitespace() -> None:
    text = "a=1\nb:2\nc 3\nd = 4\ne\t:\t5\nf   =   \n"
    assert parse_properties(text) == {"a": "1", "b": "2", "c": "3", "d": "4", "e": "5", "f": ""}


def test_only_the_first_separator_is_consumed() -> None:
    assert parse_properties("a=b=c\nk:=v\nx = =y\nurl=http://h:1") == {
        "a": "b=c",
        "k": "=v",
        "x": "=y",
        "url": "http://h:1",
    }


def test_comments_blank_lines_and_leading_whitespace() -> None:
    text = "# c\n! c2\n\n   \n   key = value  \n\t#not=this\n  ! nor this"
    # Trailing whitespace is part of the value, exactly as in Java.
    assert parse_properties(text) == {"key": "value  "}


def test_key_without_value() -> None:
    assert parse_properties("lonely\nother=") == {"lonely": "", "other": ""}


def test_continuation_lines_strip_leading_whitespace() -> None:
    text = "list=a,\\\n    b,\\\n\t c\nnext=1"
    assert parse_properties(text) == {"list": "a,b,c", "next": "1"}


def test_even_backslashes_do_not_continue() -> None:
    text = "path=C:\\\\dir\\\\\nnext=1"
    assert parse_properties(text) == {"path": "C:\\dir\\", "next": "1"}


def test_continuation_line_starting_with_hash_is_value_not_comment() -> None:
    assert parse_properties("a=1\\\n  #2\n") == {"a": "1#2"}


def test_comment_ending_in_backslash_does_not_continue() -> None:
    assert parse_properties("# comment \\\nkey=v") == {"key": "v"}


def test_continuation_at_end_of_input_is_dropped() -> None:
    assert parse_properties("a=1\\") == {"a": "1"}


def test_escapes_in_values_and_keys() -> None:
    text = "tab=a\\tb\\nc\\rd\\fe\nuni=caf\\u00e9\nkey\\=with\\:seps\\ and\\ space=v\nq=\\q\\#\\!"
    assert parse_properties(text) == {
        "tab": "a\tb\nc\rd\fe",
        "uni": "café",
        "key=with:seps and space": "v",
        "q": "q#!",
    }


def test_surrogate_pair_escapes_join() -> None:
    assert parse_properties("e=\\uD83D\\uDE00") == {"e": "\U0001f600"}


def test_last_occurrence_wins() -> None:
    assert parse_properties("a=1\nb=2\na=3") == {"a": "3", "b": "2"}


def test_crlf_cr_and_form_feed() -> None:
    assert parse_properties("a=1\r\nb=2\rc\f=\f3") == {"a": "1", "b": "2", "c": "3"}


def test_malformed_unicode_escape_names_source_and_line() -> None:
    with pytest.raises(ConfigError, match=r"x\.properties, line 3: malformed \\uXXXX"):
        parse_properties("a=1\n# ok\nb=\\u12G4\n", source="x.properties")


def test_load_missing_file_names_it(tmp_path: Path) -> None:
    missing = tmp_path / "nope.properties"
    with pytest.raises(ConfigError, match=r"nope.properties"):
        load_properties(missing)


def test_load_falls_back_to_latin1(tmp_path: Path) -> None:
    path = tmp_path / "l1.properties"
    path.write_bytes("name=Jos\xe9\n".encode("latin-1"))
    assert load_properties(path) == {"name": "José"}


def test_dump_round_trips_tricky_values() -> None:
    props = {
        "plain": "value",
        "key with = and : and # and !": " leading space, trailing ",
        "backslash\\": "C:\\dir\\",
        "ctl": "a\tb\nc\rd\fe",
        "uni": "café \U0001f600 ✓",
        "": "empty key",
        "empty": "",
    }
    text = dump_properties(props)
    assert text.isascii()
    assert parse_properties(text) == props
