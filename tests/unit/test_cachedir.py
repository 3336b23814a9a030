"""One cache folder for the whole tool (core/cachedir.py): the source tarballs, the clock
probe, crash logs and the fallback engine locks all follow the same rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from openssl_matrix.core import crash
from openssl_matrix.core.cachedir import cache_dir
from openssl_matrix.engine import hostlock
from openssl_matrix.images import sources
from openssl_matrix.measure import coreclock


def _no_system_lock_dir(tmp_path: Path) -> Path:
    """A machine-wide lock folder that cannot be made (a file stands in its way), so the
    lock folder falls back to the cache even when the tests run as root."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    return blocker / "locks"


def test_all_four_users_of_the_cache_agree_under_xdg_cache_home(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    monkeypatch.delenv("OPENSSL_MATRIX_CACHE", raising=False)
    monkeypatch.delenv("OPENSSL_MATRIX_LOCK_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    base = xdg / "openssl-matrix"
    assert cache_dir() == base
    assert sources.sources_dir() == base / "sources"
    assert coreclock._cache_dir() == base / "coreclock"
    assert hostlock.lock_dir(_no_system_lock_dir(tmp_path)) == base / "locks"
    log = crash.write_crash_log("bench", RuntimeError("a bug"))
    assert log is not None and log.parent == base / "crashes"
    assert not (tmp_path / "home" / ".cache").exists()



def test_without_xdg_cache_home_the_cache_is_under_home(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("OPENSSL_MATRIX_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "openssl-matrix"
    assert coreclock._cache_dir() == tmp_path / "home" / ".cache" / "openssl-matrix" / "coreclock"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "openssl-matrix"
