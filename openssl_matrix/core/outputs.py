"""Where commands write what the user asked for: never over what the tool did not write.

* A report folder carries a marker file of its own (``REPORT_MARKER``). ``report
  --output DIR`` builds the new report in a fresh folder beside DIR and swaps it in (one
  ``renameat2(RENAME_EXCHANGE)`` where the kernel has it); the old folder is deleted only
  when it carries the marker. A non-empty folder without it, the results tree itself, a
  folder that holds the results tree, and any folder inside the tree other than its own
  ``_report`` are refused.
* ``render --output DIR`` writes Dockerfiles beside a marker of its own
  (``RENDER_MARKER``: each file's name and the sha256 of what it wrote); a file there that
  it did not write, or that was edited since, is refused, never overwritten.
* An output path through a file (``--output NOTES.txt/x.csv``) is refused naming the
  file (exit 11), before anything is written.
* An output file (``export --output FILE``) is a regular file or a new name; ``-`` means
  standard output. An existing file is replaced only when it holds what the command
  writes (:func:`refuse_foreign_file`: an earlier export, by its header), or with
  ``--force``. A device, a folder, a FIFO or a symbolic link is refused: an atomic
  write replaces the name by rename, which would break a device node or turn a link into
  a plain file.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import fcntl
import hashlib
import json
import os
import shutil
import stat
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import IO

from openssl_matrix.core import jsonread
from openssl_matrix.core.errors import FileSystemError, UsageError
from openssl_matrix.core.files import atomic_write, open_regular, read_bounded, write_json
from openssl_matrix.core.names import clip


def file_in_path(path: Path, *, itself: bool = False) -> Path | None:
    """The first folder of ``path`` (``itself`` too: a path that must be a folder) that
    exists and is not a folder (``NOTES.txt`` in ``NOTES.txt/x.csv``): nothing can be
    written through it."""
    full = Path(os.path.abspath(path))
    for part in [*reversed(full.parents), *([full] if itself else [])]:
        try:
            mode = os.stat(part).st_mode
        except FileNotFoundError:
            return None  # nothing below it exists: it is made as a folder
        except OSError:
            return part if not part.is_dir() else None
        if not stat.S_ISDIR(mode):
            return part
    return None


def refuse_path_through_file(path: Path, flag: str, *, itself: bool = False) -> None:
    """FileSystemError (exit 11) naming the file when ``path`` goes through one (or, with
    ``itself``, is one where a folder is needed)."""
    found = file_in_path(path, itself=itself)
    if found is None:
        return
    try:  # named as the path was given: relative to the current folder, or absolute
        rel = found.relative_to(Path.cwd()) if not path.is_absolute() else found
    except ValueError:
        rel = found
    raise FileSystemError(f"{flag} {clip(str(path), 200)}: {clip(str(rel), 200)} is a file, "
                          "not a folder",
                          hint=f"give a path whose folders are folders (beside {rel}, not "
                          "inside it)")


REPORT_MARKER = ".openssl-matrix-report"


def write_report_marker(folder: Path) -> None:
    (folder / REPORT_MARKER).write_text(json.dumps({
        "written_by": "openssl-matrix report",
        "at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "note": "this folder is replaced as a whole by the next `invoke matrix report` "
                "to it; do not keep your own files here",
    }, indent=2) + "\n", encoding="utf-8")


def hold_report(folder: Path) -> IO[bytes]:
    """Hold the marker of a report folder being written (an flock, released when the
    process ends, however it ends): :func:`remove_stale_reports` leaves a held one alone."""
    fh = open(folder / REPORT_MARKER, "rb")  # noqa: SIM115 (held until the report is in)
    fcntl.flock(fh, fcntl.LOCK_EX)
    return fh


def remove_stale_reports(out: Path) -> list[Path]:
    """The temporary folders of earlier ``report --output OUT`` runs that were killed
    (``.OUT.*`` beside OUT, with the report marker, no live writer; or empty, killed
    before the marker was written): removed. A non-empty folder without the marker is
    not ours and is left alone."""
    removed: list[Path] = []
    with contextlib.suppress(OSError):
        for cand in out.parent.glob(f".{out.name}.*"):
            if cand.is_symlink() or not cand.is_dir():
                continue
            if not is_report(cand):  # killed before its marker: removed only when empty
                with contextlib.suppress(OSError):
                    cand.rmdir()
                    removed.append(cand)
                continue
            try:
                with open_regular(cand / REPORT_MARKER, follow=False) as fh:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a live writer holds it
                    shutil.rmtree(cand)
                removed.append(cand)
            except OSError:
                continue
    return removed


def is_report(folder: Path) -> bool:
    return (folder / REPORT_MARKER).is_file() and not (folder / REPORT_MARKER).is_symlink()


def check_report_target(out: Path, tree_root: Path, own_dir: Path) -> Path:
    """The absolute folder a report may be written to, or UsageError saying why not
    (``own_dir``: the tree's own report folder, ``ResultsTree.report_dir``)."""
    given = out
    refuse_path_through_file(out, "--output")
    out = Path(os.path.abspath(out))
    real_out = Path(os.path.realpath(out))
    root = Path(os.path.realpath(tree_root))
    own = Path(os.path.realpath(own_dir))
    shown = clip(str(given), 200)
    if out.is_symlink():
        raise UsageError(f"--output {shown} is a symbolic link",
                         hint="give the folder itself (the report folder is replaced as a "
                         "whole, which would replace the link)")
    if real_out == root:
        raise UsageError(f"--output {shown} is the results tree itself; writing the report "
                         "there would replace every measurement",
                         hint=f"leave --output out (the report goes to {tree_root}/"
                         f"{own_dir.name}) or give a new folder outside the tree")
    if root.is_relative_to(real_out):
        raise UsageError(f"--output {shown} holds the results tree {tree_root}",
                         hint="give a new or empty folder, or one an earlier report wrote")
    if real_out.is_relative_to(root) and real_out != own:
        raise UsageError(f"--output {shown} is inside the results tree {tree_root}; only its "
                         f"own {own_dir.name} folder may hold a report there",
                         hint="leave --output out, or give a folder outside the tree")
    if out.exists() and not out.is_dir():
        raise UsageError(f"--output {shown} exists and is not a folder",
                         hint="give a new or empty folder")
    legacy = real_out == own and (out / "data" / "report.json").is_file()  # before markers
    if out.is_dir() and any(out.iterdir()) and not is_report(out) and not legacy:
        raise UsageError(f"--output {shown} is not empty and was not written by `invoke "
                         f"matrix report` (no {REPORT_MARKER} in it): its files are left "
                         "alone", hint="give a new or empty folder, or one an earlier report "
                         "wrote")
    return out


_RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux renameat2); False when the system cannot."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd = -100
    rc = fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE)
    return bool(rc == 0)


def swap_in(new: Path, out: Path) -> None:
    """Put the finished folder ``new`` at ``out``; delete the folder that was there (a
    report, checked by ``check_report_target``) only after the swap."""
    if not out.exists():
        new.rename(out)
        return
    if not is_report(out) and any(out.iterdir()) and \
            not (out / "data" / "report.json").is_file():
        raise UsageError(f"{out} changed while the report was written: left as it is",
                         hint=f"the new report is in {new}")
    if not _exchange(new, out):
        old = Path(f"{new}.old")
        out.rename(old)
        new.rename(out)
        new = old
    shutil.rmtree(new)


def check_output_file(path: str, tree_root: Path | None = None) -> Path | None:
    """An ``--output FILE`` target: None for ``-`` (standard output), else the path after
    checking it is a new name or a regular file (never a device, folder, FIFO or link),
    and, inside the results tree ``tree_root``, only a file at its top level (where
    ``results/export.csv`` goes), never in its run or build folders."""
    if path == "-":
        return None
    p = Path(path)
    shown = clip(path, 200)
    if tree_root is not None:
        root = Path(os.path.realpath(tree_root))
        parent = Path(os.path.realpath(p.parent))
        if parent.is_relative_to(root) and (parent != root or p.name.startswith(".")):
            raise UsageError(f"--output {shown} would write into the results tree's own "
                             "folders or files", hint=f"write it beside them, e.g. "
                             f"{tree_root}/export.csv, or outside the tree")
    refuse_path_through_file(p, "--output")
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return p
    except OSError as exc:
        raise UsageError(f"--output {shown}: {exc.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        raise UsageError(f"--output {shown} is a symbolic link",
                         hint="give the file it points to, or '-' for standard output")
    if not stat.S_ISREG(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file (a device, " \
            "FIFO or socket)"
        raise UsageError(f"--output {shown} is {kind}",
                         hint="give a file name, or '-' for standard output")
    return p


def refuse_foreign_file(path: Path, ours: Callable[[bytes], bool], command: str, *,
                        force: bool) -> None:
    """UsageError when the output file ``path`` exists and its start (``ours`` of its
    first bytes) is not what ``invoke matrix COMMAND`` writes, unless ``force``."""
    if force:
        return
    try:
        with open_regular(path, follow=False) as fh:
            head = fh.read(4096)
    except FileNotFoundError:
        return
    if not ours(head):
        raise UsageError(f"--output {clip(str(path), 200)} exists and was not written by "
                         f"`invoke matrix {command}`: it is left alone",
                         hint="give a new file name (or '-' for standard output), or pass "
                         "--force to replace it")


RENDER_MARKER = ".openssl-matrix-rendered.json"


class RenderedFolder:
    """A folder of rendered Dockerfiles: the files ``render`` wrote there, by sha256."""

    def __init__(self, folder: Path) -> None:
        refuse_path_through_file(folder, "--output", itself=True)
        self.folder = folder
        self.marker = folder / RENDER_MARKER
        self.written: dict[str, str] = {}
        with contextlib.suppress(OSError, ValueError):
            data = jsonread.loads(read_bounded(self.marker, "config"))
            if isinstance(data, dict) and isinstance(data.get("files"), dict):
                self.written = {str(k): str(v) for k, v in data["files"].items()}

    def check(self, path: Path, text: str) -> None:
        """UsageError when ``path`` holds a file render did not write (or that was edited
        since) and would change."""
        try:
            current = read_bounded(path, "text")
        except FileNotFoundError:
            return
        except OSError as exc:
            raise UsageError(f"{path}: {exc.strerror}; left alone",
                             hint="move it away, or give another --output folder") from None
        new = text.encode("utf-8")
        if current == new:
            return
        if self.written.get(path.name) != hashlib.sha256(current).hexdigest():
            raise UsageError(f"{path} exists and was not written by `invoke matrix render` "
                             "(or was edited since): it is left alone",
                             hint="move it away or give another --output folder; render "
                             f"replaces only the files its marker {RENDER_MARKER} lists")

    def write(self, path: Path, text: str) -> None:
        self.written[path.name] = hashlib.sha256(text.encode("utf-8")).hexdigest()
        atomic_write(path, text)
        write_json(self.marker, {"written_by": "openssl-matrix render",
                                 "note": "render replaces only these files, and only while "
                                 "they hold what it wrote",
                                 "files": dict(sorted(self.written.items()))})
