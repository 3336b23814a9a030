from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def make_tarball(path: Path, version: str) -> str:
    """A tiny stand-in source tarball (for fake-backend tests); returns its sha256."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        data = b"fake Configure\n"
        info = tarfile.TarInfo(f"openssl-{version}/Configure")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    path.write_bytes(buf.getvalue())
    return hashlib.sha256(buf.getvalue()).hexdigest()


@pytest.fixture
def fake_matrix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A matrix of two versions whose sources are local files, and a private cache."""
    monkeypatch.setenv("OPENSSL_MATRIX_CACHE", str(tmp_path / "cache"))
    src = tmp_path / "src"
    src.mkdir()
    sha_a = make_tarball(src / "openssl-1.1.1w.tar.gz", "1.1.1w")
    sha_b = make_tarball(src / "openssl-3.0.20.tar.gz", "3.0.20")
    text = f"""
schema: 1
versions:
  1.1.1w:
    sha256: {sha_a}
    urls: [file://{src}/openssl-1.1.1w.tar.gz]
  3.0.20:
    sha256: {sha_b}
    urls: [file://{src}/openssl-3.0.20.tar.gz]
axes:
  asm: [asm, no-asm]
suites:
  quick:
    algorithms: [aes-128-cbc]
    evp: true
    seconds: 1
    bytes: 8192
    masks:
      - name: native
      - name: no-aesni
        ia32cap: "~0x200000200000000:~0x0"
profiles:
  ryzen:
    description: AMD Ryzen 5 3600
    vendor: AuthenticAMD
    model: "*Ryzen 5 3600*"
    flags: [aes]
"""
    path = tmp_path / "matrix.yaml"
    path.write_text(text)
    return path
