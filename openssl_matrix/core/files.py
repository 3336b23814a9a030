"""Reading, writing and hashing files: the one bounded read, the one atomic write and the
one file hash of the package.

Every file the tool reads goes through :func:`read_bounded` (or :func:`open_regular` for a
stream, :func:`open_lock` for a lock file): it is opened without blocking and without
following a last symbolic link where that is asked, checked with ``fstat`` to be a regular
file (a FIFO would block, ``/dev/zero`` never ends), and read up to a cap per kind of
file. Anything else is an :class:`UnreadableFile` (an ``OSError``, so each caller's
``except OSError`` names the path in its own error) within a second.

Every file the tool writes that another process (or the next run) reads is written with
:func:`atomic_write`: a temp file beside the target, flushed, fsynced and renamed over it,
so a reader sees the old file or the new one, never half. A kill leaves at most a
``.<name>.*.tmp`` file, which :meth:`ResultsTree.recover` removes. :func:`write_faults` is
the fault-injection point of the crash tests (tests/test_hostile_writes.py): within it, a
hook is called with the target after the temp file is written and before the rename.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import hashlib
import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from openssl_matrix.core.errors import ResultsError
from openssl_matrix.core.jsonfast import dumps_indented
from openssl_matrix.core.names import clip

_CHUNK = 1 << 20

#: The most bytes read of each kind of file (README, "What the tool reads").
CAPS: dict[str, int] = {
    "results": 256 << 20,  # meta.json, figures.json, build.json, journals, verdicts
    "report": 64 << 20,  # a pasted report (parse, import)
    "yaml": 1 << 20,  # matrix, report spec, patch metadata, lock (pins) file
    "lock": 64 << 10,  # a lock file's holder line
    "config": 1 << 20,  # the Docker CLI's config.json and context meta.json
    "text": 16 << 20,  # anything else (a raw output, /proc files)
}

#: Tests only: called with the target of every atomic write, before its rename (set and
#: restored by :func:`write_faults`, never assigned from outside).
_write_hook: list[Callable[[Path], None]] = []


@contextlib.contextmanager
def write_faults(hook: Callable[[Path], None] | None) -> Iterator[None]:
    """Within this block, every atomic write calls ``hook`` with its target after the temp
    file is written and before the rename (a crash test raises there: a full device, a
    Ctrl-C, a kill at the n-th write); ``None``: no hook. The one fault-injection point of
    the writer, switched on for a block instead of a module attribute patched: every
    thread's writes see it, as a crash of the whole process would be."""
    saved = list(_write_hook)
    _write_hook[:] = [] if hook is None else [hook]
    try:
        yield
    finally:
        _write_hook[:] = saved


def fault_point(path: Path) -> None:
    """Call :func:`write_faults`' hook for a write to ``path`` made outside
    :func:`atomic_write` (an import's compact file, results/compact.py: streamed to its
    temporary file, then renamed), after its temporary file is written and before the
    rename, as :func:`atomic_write` does."""
    for hook in _write_hook:
        hook(path)


class UnreadableFile(OSError):
    """A path the tool was to read is not a regular file, or is larger than its cap."""


def open_regular(path: Path, *, follow: bool = True) -> IO[bytes]:
    """``path`` opened for reading, after checking (on the open file) that it is a regular
    file: a FIFO, a device or a socket raise :class:`UnreadableFile` at once (opened with
    O_NONBLOCK, so a FIFO with no writer does not block). ``follow=False`` also refuses a
    symbolic link as the last component."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow:
            raise UnreadableFile(errno.ELOOP, "a symbolic link, not a regular file",
                                 str(path)) from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                    else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                    else "a socket" if stat.S_ISSOCK(mode) else "a special file")
            raise UnreadableFile(errno.EINVAL, f"not a regular file ({kind})", str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bounded(path: Path, kind: str = "text", cap: int | None = None, *,
                 follow: bool = True) -> bytes:
    """The bytes of the regular file ``path``, at most ``cap`` (else the cap of ``kind``,
    :data:`CAPS`); :class:`UnreadableFile` when it is no regular file or is larger."""
    limit = CAPS[kind] if cap is None else cap
    with open_regular(path, follow=follow) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise UnreadableFile(errno.EFBIG, f"larger than {limit} bytes; this is not a file "
                             "this tool reads", str(path))
    return data


def read_bounded_text(path: Path, kind: str = "text", cap: int | None = None, *,
                      follow: bool = True) -> str:
    """:func:`read_bounded` decoded as UTF-8 (``UnicodeDecodeError`` when it is not)."""
    return read_bounded(path, kind, cap, follow=follow).decode("utf-8")


def open_lock(path: Path) -> IO[str]:
    """A lock file opened for reading and writing (created when missing), never through a
    symbolic link and only when it is a regular file: a FIFO there would block the open, a
    device would be written to. :class:`UnreadableFile` otherwise."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO):
            raise UnreadableFile(exc.errno, "not a regular file (a symbolic link or a "
                                 "special file)", str(path)) from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnreadableFile(errno.EINVAL, "not a regular file", str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "a+", encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise


def current_umask() -> int:
    """The process umask, read without changing it (os.umask would race other threads)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    return 0o022


def new_file_mode() -> int:
    """The mode :func:`atomic_write` gives a new file: 0666 less the umask."""
    return 0o666 & ~current_umask()


def atomic_write(path: Path, data: str | bytes, *, durable: bool = True,
                 mode: int | None = None) -> None:
    """Write ``data`` to ``path`` so readers see the old file or the new one, never half.

    Only a regular file (or a new name) is replaced: a device, a folder, a FIFO or a
    symbolic link at ``path`` is refused (the rename would replace the node itself). The
    file gets the mode of the file it replaces, else 0666 less the umask (mkstemp's 0600
    would make results unreadable to the rest of the team). ``durable=False`` leaves out
    the fsync (a kill still sees the old file or the new one; only a power loss may not):
    for a writer of many small files that calls :func:`sync_tree` once at the end.
    ``mode``: a new file's mode instead of 0666 less the umask, for such a writer, which
    reads the umask once (:func:`new_file_mode`) instead of once a file."""
    refuse_special(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = new_file_mode() if mode is None else mode
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        for hook in _write_hook:
            hook(path)
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename is None:
            exc.filename = str(path)  # a full disk names the file being written
        raise


def write_new(path: Path, data: str, *, mode: int) -> None:
    """Write ``data`` to ``path``, a new file in a folder this process made and no reader
    trusts yet (an import's run folder before its meta.json): created (never replacing
    anything, never through a link) and written in place, without atomic_write's temporary
    file and rename. A kill in the middle leaves a short file in a folder that does not
    count, which the tree's recovery marks ``interrupted``. ``mode``: the new file's
    (:func:`new_file_mode`)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     mode)
        with os.fdopen(fd, "wb") as fh:
            for hook in _write_hook:  # (write_faults: a crash test's kill or full device)
                hook(path)
            fh.write(data.encode("utf-8"))
    except OSError as exc:
        if exc.filename is None:
            exc.filename = str(path)  # a full disk names the file being written
        raise


def write_json_new(path: Path, obj: Any, *, mode: int) -> None:
    """:func:`write_json`'s text, written by :func:`write_new`."""
    write_new(path, dumps_indented(obj, sort_keys=True, default=str, allow_nan=False) + "\n",
              mode=mode)


def write_json(path: Path, obj: Any, *, durable: bool = True, mode: int | None = None) -> None:
    """``obj`` as indented, key-sorted JSON, written atomically (``mode``: as
    :func:`atomic_write`'s)."""
    # allow_nan=False: NaN/Infinity are not JSON; every reader here would refuse them
    # dumps_indented: json.dumps(obj, indent=2, ...)'s text through the C encoder's
    # scalars (an import writes tens of thousands of these files)
    text = dumps_indented(obj, sort_keys=True, default=str, allow_nan=False)
    atomic_write(path, text + "\n", durable=durable, mode=mode)


def sync_tree(folder: Path) -> None:
    """Flush the file system holding ``folder`` to disk once (Linux syncfs; else every
    file system): what many ``durable=False`` writes need before they are reported done."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        name = ctypes.util.find_library("c")
        fn = getattr(ctypes.CDLL(name, use_errno=True), "syncfs", None) if name else None
        if fn is None or fn(fd) != 0:
            os.sync()
    finally:
        os.close(fd)


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file, as 64 lower-case hex digits."""
    digest = hashlib.sha256()
    with open_regular(path) as f:  # a FIFO or a device is refused, never read forever
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def refuse_special(path: Path) -> None:
    """For writers deep in the tool: ResultsError when ``path`` exists and is not a
    regular file (the atomic rename would replace a device, a folder or a link)."""
    with contextlib.suppress(FileNotFoundError):
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode):
            raise ResultsError(f"{clip(str(path), 200)} exists and is not a regular file; "
                               "it is left alone", hint="move it away, or write elsewhere")
