"""Open a page in headless Chromium and report what a user would see.

Talks the DevTools protocol over ``--remote-debugging-pipe`` (file descriptors 3 and 4,
NUL-terminated JSON), so it needs nothing beyond the Chromium binary and the standard
library. Collects console messages, uncaught exceptions and log entries (failed resource
loads land there), then evaluates a script in the page once it has loaded.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--disable-default-apps", "--disable-extensions", "--mute-audio")


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


@dataclass
class PageReport:
    url: str
    result: Any
    console: list[dict[str, Any]] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    log: list[dict[str, Any]] = field(default_factory=list)

    @property
    def errors(self) -> list[str]:
        """Every console error or warning, exception and error log entry, as text."""
        out = [f"console.{m['type']}: {m['text']}" for m in self.console
               if m["type"] in ("error", "warning", "assert")]
        out += [f"exception: {e}" for e in self.exceptions]
        out += [f"log {e.get('level')}: {e.get('text')} {e.get('url', '')}".strip()
                for e in self.log if e.get("level") in ("error", "warning")]
        return out


class _Pipe:
    def __init__(self, proc: subprocess.Popen[bytes], to_browser: int, from_browser: int,
                 deadline: float) -> None:
        self.proc = proc
        self.wfd = to_browser
        self.rfd = from_browser
        self.deadline = deadline
        self.buf = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, params: dict[str, Any] | None = None,
             session: str | None = None) -> dict[str, Any]:
        self.next_id += 1
        msg: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.wfd, json.dumps(msg).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            self.events.append(reply)

    def wait_event(self, method: str) -> dict[str, Any]:
        for i, ev in enumerate(self.events):
            if ev.get("method") == method:
                return self.events.pop(i)
        while True:
            ev = self._read()
            if ev.get("method") == method:
                return ev
            self.events.append(ev)

    def _read(self) -> dict[str, Any]:
        while b"\0" not in self.buf:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("Chromium did not answer in time")
            ready, _, _ = select.select([self.rfd], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.rfd, 1 << 16)
            if not chunk:
                raise RuntimeError(f"Chromium closed the pipe (exit {self.proc.poll()})")
            self.buf += chunk
        raw, _, self.buf = self.buf.partition(b"\0")
        data: dict[str, Any] = json.loads(raw)
        return data


def open_page(url: str, script: str, *, timeout: float = 90.0,
              screenshot: str | None = None, width: int = 1400,
              height: int = 2000) -> PageReport:
    """Load ``url`` in headless Chromium, wait for the load event, evaluate ``script``;
    with ``screenshot``, also save the top ``width`` × ``height`` pixels of the page
    there as PNG."""
    exe = chromium()
    if exe is None:
        raise FileNotFoundError("no chromium binary on PATH")
    to_r, to_w = os.pipe()      # we write, the browser reads on fd 3
    from_r, from_w = os.pipe()  # the browser writes on fd 4, we read

    def wire() -> None:  # runs in the child between fork and exec
        os.dup2(to_r, 3)
        os.dup2(from_w, 4)

    with tempfile.TemporaryDirectory(prefix="openssl-matrix-chromium-") as profile:
        proc = subprocess.Popen(
            [exe, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe",
             "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=wire, pass_fds=(3, 4), close_fds=True)
        os.close(to_r)
        os.close(from_w)
        pipe = _Pipe(proc, to_w, from_r, time.monotonic() + timeout)
        try:
            target = pipe.send("Target.createTarget", {"url": "about:blank"})["targetId"]
            session = pipe.send("Target.attachToTarget",
                                {"targetId": target, "flatten": True})["sessionId"]
            for domain in ("Runtime", "Log", "Page"):
                pipe.send(f"{domain}.enable", session=session)
            pipe.send("Emulation.setDeviceMetricsOverride",
                      {"width": width, "height": height, "deviceScaleFactor": 1,
                       "mobile": False}, session=session)
            pipe.send("Page.navigate", {"url": url}, session=session)
            pipe.wait_event("Page.loadEventFired")
            value = pipe.send("Runtime.evaluate", {"expression": script, "returnByValue": True,
                                                   "awaitPromise": True},
                              session=session)
            report = PageReport(url, (value.get("result") or {}).get("value"))
            if screenshot:
                shot = pipe.send("Page.captureScreenshot", {"format": "png"}, session=session)
                with open(screenshot, "wb") as f:
                    f.write(base64.b64decode(shot["data"]))
            for ev in pipe.events:
                params = ev.get("params") or {}
                if ev.get("method") == "Runtime.consoleAPICalled":
                    text = " ".join(str(a.get("value", a.get("description", "")))
                                    for a in params.get("args", []))
                    report.console.append({"type": params.get("type"), "text": text})
                elif ev.get("method") == "Runtime.exceptionThrown":
                    details = params.get("exceptionDetails") or {}
                    report.exceptions.append(str(details.get("text")) + " " + str(
                        (details.get("exception") or {}).get("description", "")))
                elif ev.get("method") == "Log.entryAdded":
                    report.log.append(params.get("entry") or {})
            with contextlib.suppress(RuntimeError, TimeoutError, OSError):
                pipe.send("Browser.close")
            return report
        finally:
            os.close(to_w)
            os.close(from_r)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


if __name__ == "__main__":  # python3 tests/browser.py PAGE.html OUT.png [HEIGHT]
    import sys
    from pathlib import Path

    page, out = Path(sys.argv[1]).resolve(), sys.argv[2]
    found = open_page(page.as_uri(), "document.title", screenshot=out,
                      height=int(sys.argv[3]) if len(sys.argv) > 3 else 2000)
    print(f"{out}: {found.result}; errors: {found.errors or 'none'}")


def open_moved_report(out_dir: Path, tmp_path: Path, script: str) -> PageReport:
    """Move a report folder away from its results tree first (it must work on its own),
    then open its index.html from disk (file://) and evaluate ``script``."""
    folder = tmp_path / "elsewhere" / "report"
    folder.parent.mkdir()
    out_dir.rename(folder)
    return open_page((folder / "index.html").as_uri(), script)
