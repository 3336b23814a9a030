"""A fake container backend for unit tests: the one seam where Docker may be faked.

It keeps images in a dict and answers ``run`` from a responder function, so the
build and bench logic can be tested without a Docker engine. A command-line test hands
its fakes to the command table through the one engine factory (``engine_of`` below, to
``cli.shared.handlers`` or ``cli.worker.thread_lab``); nothing is monkeypatched into a
module. Integration tests (``tests/docker/``, marked ``docker``) use the real
``DockerBackend``.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openssl_matrix.cli.shared import EngineFactory
from openssl_matrix.engine.backend import (
    Backend,
    ImageFacts,
    RunLimits,
    RunResult,
    endpoint_is_local,
)
from openssl_matrix.engine.engineinfo import EngineInfo
from openssl_matrix.measure.interleave import LIBRARY_OPERATIONS

if TYPE_CHECKING:
    from openssl_matrix.matrix.model import Matrix
    from openssl_matrix.measure.session import Bencher
    from openssl_matrix.results.tree import ResultsTree

Responder = Callable[[str, Sequence[str], Mapping[str, str]], tuple[int, str, str]]

CPUINFO_EPYC = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 7B13
cpu MHz\t\t: 2450.000
flags\t\t: fpu sse2 pclmulqdq aes avx avx2 sha_ni
processor\t: 1
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 7B13
flags\t\t: fpu sse2 pclmulqdq aes avx avx2 sha_ni
==> uname
Linux 6.1.0 x86_64
==> loadavg
0.10 0.20 0.30 1/100 123
==> governor
unknown
==> boost
unknown
"""


class FakeBackend:
    def __init__(self, responder: Responder | None = None) -> None:
        self.images: dict[str, str] = {"debian:bookworm": "sha256:base"}
        self.labels: dict[str, dict[str, str]] = {}
        self.builds: list[str] = []
        self.buildkit: list[str] = []  # tags built with BuildKit (a compiler cache)
        self.dockerfiles: list[str] = []  # the Dockerfile of each build, in order
        self.runs: list[tuple[str, tuple[str, ...], dict[str, str]]] = []
        self.limits: list[RunLimits] = []
        self.removed_labels: list[dict[str, str]] = []
        self.responder = responder
        self.info: dict[str, Any] = {"endpoint": "fake", "server_version": "0-fake",
                                     "kernel": "fake", "arch": "x86_64", "os_type": "linux"}
        self.cpuinfo = CPUINFO_EPYC  # what /proc/cpuinfo (and uname ...) say on this engine
        self.image_arch: dict[str, str] = {}  # tag -> Docker architecture (default amd64)
        self.sizes: dict[str, int] = {}  # tag -> bytes (default 200 MB)
        self.saved: list[str] = []
        self.loaded: list[str] = []
        self.pushed: list[tuple[str, str]] = []
        self.pulled: list[tuple[str, str]] = []
        self.removed_images: list[str] = []
        self.registry: dict[str, dict[str, Any]] | None = None  # shared by pushers/pullers
        self.probes: list[tuple[str, ...]] = []  # core probe command lines (run_on_host)
        self.ports_per_cycle = 3.0
        self.port_readings: list[float] = []

    def engine_info(self) -> EngineInfo:
        return EngineInfo.from_json(self.info)

    def run_on_host(self, argv: Sequence[str], *, timeout: float) -> str | None:
        """The core probe (coreclock.py) as it answers on a steady core: 3 GHz, AESENC
        in 4 cycles, the throughput kernel at :attr:`ports_per_cycle` instructions a
        cycle — the next of :attr:`port_readings` while any are left (a test scripts a
        sibling that way). Like a remote engine (None) unless :attr:`info` names a
        local endpoint, as a real engine's host would be this one."""
        if not endpoint_is_local(self.info):
            return None
        self.probes.append(tuple(argv))
        ipc = self.port_readings.pop(0) if self.port_readings else self.ports_per_cycle
        return "".join(f"cpu {cpu} 3.0000" + (" aesenc 4.000" if "aes" in argv[3:] else "")
                       + (f" ports {ipc:.4f} {ipc:.4f} kernel aessha" if "ports" in argv[3:]
                          else "") + "\n" for cpu in argv[1].split(","))

    def image_id(self, tag: str) -> str | None:
        return self.images.get(tag)

    def image_labels(self, tag: str) -> dict[str, str]:
        return dict(self.labels.get(tag, {}))

    def build(self, context: Path, tag: str, *, log_path: Path, network: str | None,
              labels: Mapping[str, str], buildargs: Mapping[str, str] | None = None,
              buildkit: bool = False) -> str:
        self.builds.append(tag)
        dockerfile = (context / "Dockerfile").read_text()
        self.dockerfiles.append(dockerfile)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        text = f"fake build of {tag}\n"
        if buildkit:
            self.buildkit.append(tag)
            if "--mount=type=cache" in dockerfile and "ccache --show-log-stats" in dockerfile:
                # what ccache 4.7 prints after make: a second build of a series hits more
                hits = min(40, 10 * sum("--mount=type=cache" in d for d in self.dockerfiles[:-1]))
                text += (f"==> openssl-matrix ccache stats\nCacheable calls: 40 / 44 (90.91%)\n"
                         f"  Hits:           {hits} / 40 ({hits / 0.4:.2f}%)\n"
                         f"    Direct:       {hits} / {hits}\n"
                         f"    Preprocessed: 0 / 0\n"
                         f"  Misses:         {40 - hits} / 40\n")
        log_path.write_text(text)
        image_id = "sha256:" + hashlib.sha256(dockerfile.encode()).hexdigest()
        self.images[tag] = image_id
        self.labels[tag] = dict(labels)
        return image_id

    def run(self, image: str, command: Sequence[str], *, env: Mapping[str, str] | None = None,
            limits: RunLimits | None = None) -> RunResult:
        env = dict(env or {})
        command = tuple(command)
        self.runs.append((image, command, env))
        self.limits.append(limits or RunLimits())
        if command[:2] == ("/bin/sh", "-c") and "cpuinfo" in command[2]:
            code, out, err = 0, self.cpuinfo, ""
        elif command[:2] == ("/bin/sh", "-c") and "openssl-matrix" in command[2] and \
                command[-1] != "openssl-matrix-tls":  # not the TLS suite's script
            out = ("==> configure.txt\nperl ./Configure linux-x86_64\n==> endbr32.txt\n0\n"
                   "==> endbr64.txt\n12\n==> version.txt\nOpenSSL 1.1.1w  11 Sep 2023\n")
            code, err = 0, ""
        elif command[:3] == ("openssl", "version", "-a"):
            code, out, err = 0, "OpenSSL 1.1.1w  11 Sep 2023\nbuilt on: fake\n", ""
        elif self.responder is not None:
            code, out, err = self.responder(image, command, env)
        else:
            code, out, err = 1, "", "no responder"
        return RunResult(command=tuple(command), env=env, stdout=out, stderr=err,
                         exit_code=code, started="2026-01-01T00:00:00+00:00",
                         ended="2026-01-01T00:00:01+00:00", seconds=1.0)

    def remove_containers(self, labels: Mapping[str, str]) -> list[str]:
        self.removed_labels.append(dict(labels))
        return []

    # -- moving images (ship.py): a saved image is a JSON blob of its id, labels, arch

    def image_facts(self, tag: str) -> ImageFacts | None:
        if tag not in self.images:
            return None
        return ImageFacts(id=self.images[tag], size=self.sizes.get(tag, 200_000_000),
                          os="linux", arch=self.image_arch.get(tag, "amd64"),
                          labels=dict(self.labels.get(tag, {})), tags=(tag,))

    def _blob(self, tag: str) -> dict[str, Any]:
        return {"tag": tag, "id": self.images[tag], "labels": self.labels.get(tag, {}),
                "arch": self.image_arch.get(tag, "amd64"),
                "size": self.sizes.get(tag, 200_000_000)}

    def _take(self, blob: Mapping[str, Any], tag: str) -> None:
        self.images[tag] = str(blob["id"])
        self.labels[tag] = dict(blob["labels"])
        self.image_arch[tag] = str(blob["arch"])
        self.sizes[tag] = int(blob["size"])

    def save_image(self, tag: str) -> Iterator[bytes]:
        self.saved.append(tag)
        data = json.dumps(self._blob(tag)).encode()
        for i in range(0, len(data), 16):
            yield data[i:i + 16]

    def load_image(self, chunks: Iterable[bytes]) -> None:
        blob = json.loads(b"".join(chunks))
        self.loaded.append(str(blob["tag"]))
        self._take(blob, str(blob["tag"]))

    def push_image(self, tag: str, ref: str) -> None:
        assert self.registry is not None
        self.pushed.append((tag, ref))
        self.registry[ref] = self._blob(tag)

    def pull_image(self, ref: str, tag: str) -> None:
        assert self.registry is not None
        self.pulled.append((ref, tag))
        self._take(self.registry[ref], tag)

    def remove_image(self, tag: str) -> None:
        self.removed_images.append(tag)
        self.images.pop(tag, None)


#: A command table as ``cli.shared.handlers`` (or ``cli.worker.thread_lab``) makes it.
Handlers = dict[str, Callable[..., int]]


def engine_of(make: Callable[..., Backend]) -> EngineFactory:
    """A test's fake engines as the command line's engine factory, to hand to
    ``handlers(engine)`` or ``thread_lab(engine)`` (the seam; nothing is monkeypatched):
    ``make(base_url=URL)`` when it takes the URL a command reaches the engine at (None:
    the environment's), else ``make()``."""
    takes_url = bool(inspect.signature(make).parameters)

    def engine(base_url: str | None, allow_plain_tcp: bool) -> Backend:
        return make(base_url=base_url) if takes_url else make()

    return engine


def fake_bench(path: Path, tmp_path: Path, responder: Responder, *,
               cpuinfo: str | None = None, max_attempts: int = 0,
               ) -> tuple[Matrix, FakeBackend, ResultsTree, Bencher]:
    """The matrix at ``path`` built on a fake engine answering with ``responder``
    (``cpuinfo``: what its probe prints) into a results tree under ``tmp_path``, and a
    bencher for it (``max_attempts`` as the command line's, 0 as the Python API's)."""
    from openssl_matrix.images.build import Builder
    from openssl_matrix.images.sources import default_urls
    from openssl_matrix.matrix.load import load_matrix
    from openssl_matrix.measure.session import Bencher
    from openssl_matrix.results.tree import ResultsTree

    m = load_matrix(path, default_urls=default_urls)
    backend = FakeBackend(responder)
    if cpuinfo is not None:
        backend.cpuinfo = cpuinfo
    tree = ResultsTree(tmp_path / "results")
    Builder(m, backend, tree, workdir=tmp_path / "work").build(list(m.variants))
    return m, backend, tree, Bencher(m, backend, tree, engine=backend.engine_info(),
                                     git_commit=None, max_attempts=max_attempts)


def one_release_bench(tmp_path: Path, suites: str, responder: Responder, *,
                      cpuinfo: str | None = None,
                      ) -> tuple[Matrix, FakeBackend, ResultsTree, Bencher]:
    """``fake_bench`` of a matrix of 1.1.1w (a stand-in tarball, a private cache under
    ``tmp_path``: the caller sets ``OPENSSL_MATRIX_CACHE`` there) with ``suites`` (the
    YAML of its ``suites:`` mapping, indented two spaces)."""
    from .conftest import make_tarball

    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    sha = make_tarball(src / "openssl-1.1.1w.tar.gz", "1.1.1w")
    path = tmp_path / "matrix.yaml"
    path.write_text(f"versions:\n  1.1.1w:\n    sha256: {sha}\n"
                    f"    urls: [file://{src}/openssl-1.1.1w.tar.gz]\nsuites:\n{suites}")
    return fake_bench(path, tmp_path, responder, cpuinfo=cpuinfo)


def fake_pairbench(command: Sequence[str],
                   bytes_per_s: Callable[[str, str | None, str, bool], float], *,
                   blocks: int = 40, cpu_share: float = 1.0) -> str:
    """Synthetic output of ``resources/harness/pairbench.c`` for one of its command
    lines (its real output is read in tests/unit/test_interleave.py and the docker
    tests): each side's operations a 5-ms window from ``bytes_per_s(variant id, the
    side's OPENSSL_ia32cap or None, algorithm, decrypt)``, with a little spread so that
    the estimate has an interval; ``cpu_share``: the share of each window's wall time the
    thread had the CPU (below 0.9: preempted, a busy host). A library operation
    (interleave.LIBRARY_OPERATIONS) runs at ``bytes_per_s`` operations a second, with
    block size 0 and direction ``operation``, as the harness prints it."""
    args = list(command)

    def arg(flag: str) -> str | None:
        return args[args.index(flag) + 1] if flag in args else None

    variants = [str(arg(f)).split("/")[3] for f in ("--a", "--b")]
    caps = [arg("--a-cap"), arg("--b-cap")]
    size = int(str(arg("--bytes")))
    decrypt = "--decrypt" in args
    algorithms = [a for a in args[args.index("--seconds") + 2:] if not a.startswith("--")]
    lines = [f"+PAIR:side:{i}:version=OpenSSL (fake):ia32cap={caps[i] or ''}" for i in (0, 1)]
    for alg in algorithms:
        operation = alg in LIBRARY_OPERATIONS
        direction = "operation" if operation else "digest" \
            if alg.startswith(("sha", "md")) else "decrypt" if decrypt else "encrypt"
        lines.append(f"+PAIR:begin:alg={alg}:bytes={0 if operation else size}:window_ms=5:"
                     f"seconds=2:direction={direction}")
        w = 0
        for block in range(blocks):
            for side in (0, 1, 1, 0):
                ops = bytes_per_s(variants[side], caps[side], alg, decrypt) * 0.005 / (
                    1 if operation else size)
                ops *= 1 + 0.002 * (block % 3)
                cpu = round(5_000_000 * cpu_share)
                lines.append(f"+PAIR:w:{w}:{side}:{max(1, round(ops))}:5000000:{cpu}")
                w += 1
        lines.append(f"+PAIR:end:alg={alg}:windows={w}")
    return "\n".join(lines) + "\n"
