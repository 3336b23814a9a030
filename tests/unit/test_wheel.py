"""A wheel built from the checkout carries everything the tool reads from its own
installation: installed into a fresh venv, ``python -m openssl_matrix render`` run from a
folder that holds only a copy of matrix.yaml writes the default Dockerfiles, the same
text as the checkout renders. No engine is needed (render never reaches one)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

from openssl_matrix.images.render import render
from openssl_matrix.images.sources import default_urls
from openssl_matrix.matrix.load import load_matrix

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str | Path, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    out = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, f"{args}: {out.stdout[-2000:]}{out.stderr[-3000:]}"
    return out


def test_a_wheel_in_a_fresh_venv_renders_the_default_dockerfiles(tmp_path: Path) -> None:
    # no PYTHONPATH: the venv must find the installed copy, not this checkout
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    src = tmp_path / "src"  # a copy, so the build leaves nothing in the checkout
    shutil.copytree(ROOT / "openssl_matrix", src / "openssl_matrix",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
        ".", "-w", tmp_path / "whl", cwd=src, env=env)
    (wheel,) = (tmp_path / "whl").glob("openssl_matrix-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for shipped in ("openssl_matrix/resources/dockerfiles/openssl.Dockerfile.j2",
                    "openssl_matrix/resources/dockerfiles/srcfacts.pl",
                    "openssl_matrix/resources/dockerfiles/buildinfo.sh",
                    "openssl_matrix/resources/patches/no-endbr32.patch",
                    "openssl_matrix/resources/reports/ivy-bridge-aesni-blog.yaml",
                    "openssl_matrix/resources/templates/report.html.j2",
                    "openssl_matrix/resources/sweep-table.json", "openssl_matrix/py.typed",
                    "openssl_matrix/__main__.py"):
        assert shipped in names, shipped

    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv, cwd=tmp_path, env=env)
    python = venv / "bin" / "python"
    # The venv borrows this interpreter's installed dependencies (docker, jinja2, ...) so
    # nothing is downloaded: their folder is appended to its path by a .pth line, which
    # (unlike --system-site-packages) runs none of that folder's own .pth files, so an
    # editable install of a checkout there cannot stand in for the wheel.
    purelib = run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                  cwd=tmp_path, env=env).stdout.strip()
    Path(purelib, "borrowed-dependencies.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n")
    run(python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel,
        cwd=tmp_path, env=env)

    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(ROOT / "matrix.yaml", work / "matrix.yaml")
    where = run(python, "-c", "import openssl_matrix; print(openssl_matrix.__file__)",
                cwd=work, env=env).stdout.strip()
    assert Path(where).is_relative_to(venv), where
    run(python, "-m", "openssl_matrix", "render", "--matrix", "matrix.yaml", "--output",
        "out", cwd=work, env=env)

    m = load_matrix(ROOT / "matrix.yaml", default_urls=default_urls)
    written = sorted(p.name for p in (work / "out").iterdir() if p.suffix == ".Dockerfile")
    assert written == sorted(f"{v.id}.Dockerfile" for v in m.variants)
    for v in m.variants:
        assert (work / "out" / f"{v.id}.Dockerfile").read_text() == render(v).dockerfile
    assert sorted(p.name for p in work.iterdir()) == ["matrix.yaml", "out"]

    version = run(venv / "bin" / "openssl-matrix", "--version", cwd=work, env=env)
    assert version.stdout.startswith("openssl-matrix ")
