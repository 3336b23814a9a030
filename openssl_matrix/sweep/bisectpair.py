"""A bisection's interleaved pairs on a Docker engine: ``bisect.PairMeasure`` through the
pair harness (``resources/harness/pairbench.c``), as reproductions time their claims.

One call is one run of the harness with two builds of a step, ``top`` as its side B and
``bottom`` as its side A: both builds' EVP loops of the cell (its algorithm, block size,
direction and mask) alternating in 5-ms windows in one process, for ``SECONDS`` (the
harness runs an algorithm again while its interval is wider than ±2 %, measure/pairrun.py).
The ``run``-th call of the same pair is pooled with the earlier ones (each run cut in
blocks on its own). The harness image holds both builds' libcrypto (images/pairimage.py,
built once per pair, cached by content). Each run is filed under
``_interleaved/<cpu>/bisect-<stamp>/<bottom>--vs--<top>--<run>/`` with its raw output, and
its place is in the bisection's record.

Where the harness cannot time the cell (``pairrun.harness_refusal``: before 1.1.0, not
x86_64, another base image, a low-level path; or an engine, a mask not expressible on a
side), or its run kept no block, the answer says why and the step is decided from rounds.
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any, Protocol

from openssl_matrix.core import log
from openssl_matrix.core.errors import BuildError, DockerUnavailable, FatalError
from openssl_matrix.core.stats import RatioEstimate
from openssl_matrix.engine.backend import RunLimits
from openssl_matrix.images.pairimage import ensure_pair_image
from openssl_matrix.matrix.model import Suite, Variant
from openssl_matrix.measure.cell import TREE_LABEL
from openssl_matrix.measure.interleave import CPU_SHARE_MIN
from openssl_matrix.measure.pairrun import (
    PairPlan,
    Side,
    harness_refusal,
    measure_pair,
    record_of,
    short_row,
    timeout,
)
from openssl_matrix.measure.session import Bencher
from openssl_matrix.measure.speedcmd import mask_value
from openssl_matrix.results.interleaved import record_name
from openssl_matrix.results.pairrecord import PairRecord
from openssl_matrix.results.tree import ResultsTree
from openssl_matrix.sweep.bisect import INTERLEAVED, Paired, Unmeasurable

#: Seconds of one harness run of the cell (as a reproduction's runs).
SECONDS = 2


class Builds(Protocol):
    """What builds a bisection's releases and benches them (bisectrun.EngineMeasure)."""

    suite: Suite  #: the cell's suite, narrowed to the cell
    bencher: Bencher
    tree: ResultsTree
    cpu_profile: str
    wait: bool
    ready: dict[str, Variant]  #: the releases built so far

    def ensure(self, release: str) -> Variant:
        """The release's variant, built (Unmeasurable when it cannot be)."""


class EnginePairs:
    """``bisect.PairMeasure`` on the engine ``measure`` builds and benches on."""

    def __init__(self, measure: Builds, *, seconds: int = SECONDS) -> None:
        self.m = measure
        self.suite = replace(measure.suite, interleave=seconds)
        self.session = f"bisect-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}"
        self.texts: dict[tuple[str, str], list[str]] = {}  #: each pair's runs so far
        self._cpu: str | None = None

    def refusal(self, top: Variant, bottom: Variant) -> str | None:
        """Why the harness cannot time the cell on these two builds, or None."""
        why = harness_refusal([bottom, top], self.suite)
        if why is not None:
            return why
        if self.suite.engines and self.suite.engines[0] is not None:
            return f"the cell runs through -engine {self.suite.engines[0]}: the harness " \
                   "loads no engine"
        mask = self.suite.masks[0]
        for v in (bottom, top):
            value, why_not = mask_value(mask, v.version.version)
            if (mask.ia32cap or mask.disable) and value is None:
                return f"{v.id}: the mask {mask.name} cannot be set ({'; '.join(why_not)})"
        return None

    def side(self, v: Variant) -> Side:
        mask = self.suite.masks[0]
        return Side(v, mask.name, mask_value(mask, v.version.version)[0])

    def cpu(self, image: str) -> str:
        """The results tree's CPU folder, as the bench names it (read once)."""
        if self._cpu is None:
            self._cpu = self.m.bencher.resolve_cpu(self.m.cpu_profile, image, force=False)[0]
        return self._cpu

    def hold(self) -> AbstractContextManager[Any]:
        lock = self.m.bencher.host_lock()
        return nullcontext() if lock is None else lock.measuring(
            f"bisection pair → {self.m.tree.root}", wait=self.m.wait, say=log.info)

    def __call__(self, top: str, bottom: str, run: int) -> Paired:
        vt, vb = self.m.ensure(top), self.m.ensure(bottom)
        why = self.refusal(vt, vb)
        if why is not None:
            return Paired(why_not=why)
        try:
            tags = {r: self.m.bencher.image_for(v)[0] for r, v in ((top, vt), (bottom, vb))}
        except BuildError as exc:
            raise Unmeasurable(top if top not in self.m.ready else bottom, exc.message) \
                from None
        plan = PairPlan("bisect", self.side(vt), self.side(vb))
        try:
            image = ensure_pair_image(self.m.bencher.backend,
                                      [(vb, tags[bottom]), (vt, tags[top])],
                                      self.m.tree.builds_dir(),
                                      self.m.tree.bisect_dir(".work"))
        except BuildError as exc:
            return Paired(why_not=f"the pair harness could not be built: {exc.message}")
        return self.run(plan, image.tag, top, bottom, run)

    def run(self, plan: PairPlan, image: str, top: str, bottom: str, run: int) -> Paired:
        """One more run of the pair, pooled with the earlier ones; filed."""
        root = self.m.tree.root
        labels = ((TREE_LABEL, str(root.resolve())), ("openssl-matrix.pid", str(os.getpid())))
        suite = self.suite
        self.m.tree.lock(wait=self.m.wait)
        try:
            with self.hold():
                rec, raw = measure_pair(
                    self.m.bencher.backend, image, plan, suite,
                    lambda n: RunLimits(timeout=timeout(suite, n), labels=labels),
                    directions=suite.directions)
        except DockerUnavailable:
            raise
        except FatalError as exc:
            return Paired(why_not=f"the pair harness run failed: {exc.message}")
        finally:
            self.m.tree.unlock()
        if run == 0:
            self.texts[(top, bottom)] = []
        texts = self.texts.setdefault((top, bottom), [])
        texts.append(raw.split("\n# stderr\n")[0])
        if len(texts) > 1:  # pooled with the pair's earlier runs
            rec = replace(record_of(plan, rec.command, "".join(texts), rec.exit_code,
                                    rec.started, rec.seconds), errors=rec.errors)
        name = f"{plan.name}--{len(texts)}"
        rec = replace(rec, pair_image=image, bisection_run=run, pooled_runs=len(texts))
        cpu = self.cpu(image)
        self.m.tree.file_pair(cpu, self.session, name, rec, raw)
        where = record_name(cpu, self.session, name)
        return self.paired(rec, where)

    def paired(self, rec: PairRecord, where: str) -> Paired:
        """The cell's row of a pair's record as a ratio, or why there is none."""
        alg = self.suite.algorithms[0]
        row = rec.row(alg)
        if rec.exit_code != 0 or row is None:
            errors = "; ".join(rec.errors) or "no row"
            return Paired(why_not=f"the pair harness gave no ratio for {alg}: {errors}",
                          record=where)
        log.info(f"    interleaved {rec.numerator} / {rec.denominator}: " + short_row(row))
        e = row.estimate
        if e is None:
            return Paired(why_not=f"no block of the harness's windows had the CPU for "
                          f"{CPU_SHARE_MIN:.0%} of its time (a busy host)", record=where)
        est = RatioEstimate(e.blocks, float(e.ratio), e.ci_low, e.ci_high, method=INTERLEAVED)
        return Paired(est, rate_top=e.rate_b, rate_bottom=e.rate_a,
                      disturbed=bool(e.disturbed), record=where)
