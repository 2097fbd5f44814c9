from __future__ import annotations

from pathlib import Path

import pytest

from kmirror.config.secret import read_secret_text
from kmirror.errors import ConfigError

pytestmark = pytest.mark.unit


def test_secret_file_loses_only_its_trailing_newline(tmp_path: Path) -> None:
    f = tmp_path / "password"
    f.write_text(" s3cr=t \r\n")
    assert read_secret_text(str(f), "X_PASSWORD_FILE") == " s3cr=t "


def test_unreadable_secret_file_names_who_pointed_at_it(tmp_path: Path) -> None:
    missing = tmp_path / "absent"
    with pytest.raises(ConfigError) as err:
        read_secret_text(str(missing), "mm2.properties: source.ssl.key.password")
    text = str(err.value)
    assert text.startswith(f"mm2.properties: source.ssl.key.password names '{missing}'")
    assert "mount the secret there or fix the path" in text
