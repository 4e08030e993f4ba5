"""Progress on long work: a tqdm bar on a terminal or in a notebook when tqdm is installed,
otherwise periodic lines on stderr (a log file or a pipe gets lines, without carriage returns).

* :func:`progress_bar` wraps an iterable (the EM loops of the label models; silent without
  tqdm, since a library loop should not print).
* :class:`Convergence` is the loop of every EM fit: a bounded number of iterations, a stop
  when the objective settles, its history, and a progress bar (``progress="auto"``: lines
  on stderr only once the fit has run :data:`HEARTBEAT_DELAY` seconds).
* :class:`Progress` counts steps of a known total (a push of predictions): a tqdm bar, or
  (without tqdm, or ``stream`` neither a terminal nor a notebook's) one line on ``stream`` at
  the start, every ``interval`` seconds and at the end.
* :class:`Heartbeat` marks work of unknown length (a fit): nothing for ``delay`` seconds,
  then a tqdm timer, or (as for :class:`Progress`) a line every ``every`` seconds, and a last
  line.

``disable=True`` silences each (the command lines' ``--quiet``).
"""
from __future__ import annotations

import sys
import threading
import time
from typing import Any, Iterable, Optional, TextIO

__all__ = ["progress_bar", "Convergence", "Progress", "Heartbeat", "HEARTBEAT_DELAY"]

#: Seconds of silence before :class:`Heartbeat` shows that a fit is still running.
HEARTBEAT_DELAY = 3.0


class _Silent:
    def __init__(self, iterable: Iterable, **_: Any) -> None:
        self._it = iterable

    def __iter__(self):
        return iter(self._it)

    def set_postfix(self, *_: Any, **__: Any) -> None:
        pass

    def close(self) -> None:
        pass


def _tqdm() -> Any:
    try:
        from tqdm.auto import tqdm
    except ImportError:  # tqdm is optional
        return None
    return tqdm


def _bar_class(stream: Any, use_tqdm: Optional[bool]) -> Any:
    """tqdm for a bar on ``stream``, or None for plain lines: ``use_tqdm=None`` draws a bar only
    on a terminal or in a notebook (a bar redraws itself with carriage returns, which a log
    file or a pipe keeps as one long line of junk); ``True``: a bar wherever tqdm is
    installed."""
    if use_tqdm is False:
        return None
    # a notebook's stream says it is no terminal, and there tqdm.auto draws a widget
    notebook = type(stream).__module__.startswith("ipykernel")
    if use_tqdm is None and not notebook:
        isatty = getattr(stream, "isatty", None)
        try:
            if not (callable(isatty) and isatty()):
                return None
        except (ValueError, OSError):   # a closed stream
            return None
    return _tqdm()


def progress_bar(iterable: Iterable, desc: str = "", disable: bool = False, **kwargs: Any):
    """A tqdm bar over `iterable` (``disable=True`` or no tqdm: a silent wrapper)."""
    tqdm = None if disable else _tqdm()
    if tqdm is None:
        return _Silent(iterable)
    return tqdm(iterable, desc=desc, **kwargs)


class Convergence:
    """The loop of an EM fit: at most ``max_iter`` iterations, stopped after the first whose
    objective moved by less than ``tol`` from the previous one (``relative=True``: less than
    ``tol`` times its size)::

        loop = Convergence(self.max_iter, self.tol, "Dawid-Skene EM", self.progress)
        for _ in loop:
            ...                       # one M-step and one E-step
            loop.record(objective)    # the last statement of the body
        self.log_likelihood_ = np.asarray(loop.history)

    ``history``: the recorded objectives, one per iteration run.
    """

    def __init__(self, max_iter: int, tol: float, desc: str = "", progress: Any = False,
                 relative: bool = False, *, stream: Optional[TextIO] = None,
                 delay: Optional[float] = None, every: float = 5.0) -> None:
        if progress not in (True, False, "auto"):
            raise ValueError(f"progress must be True, False or 'auto', got {progress!r}")
        self.max_iter, self.tol, self.desc = int(max_iter), float(tol), desc
        self.progress, self.relative = progress, bool(relative)
        self.stream = stream if stream is not None else sys.stderr
        self.delay = HEARTBEAT_DELAY if delay is None else float(delay)
        self.every = float(every)
        self.history: list = []
        self.converged = False
        self._bar: Any = None
        self._lines = False   # periodic lines instead of a tqdm bar
        self._shown = False

    def __iter__(self):
        # True: a tqdm bar (lines without tqdm); "auto": lines once the fit has run `delay`
        # seconds, so short fits stay silent and a long one is never silent
        bar = self.progress is True and _tqdm() is not None
        self._lines = self.progress == "auto" or (self.progress is True and not bar)
        if self.progress is True and not bar:
            self.delay = 0.0
        self._start = self._last = time.monotonic()
        self._bar = progress_bar(range(self.max_iter), desc=self.desc, disable=not bar)
        try:
            for i in self._bar:
                yield i
                if self.converged:
                    break
        finally:
            self._bar.close()
            if self._shown:
                how = (f"converged after {len(self.history)} iterations" if self.converged else
                       f"stopped after {len(self.history)} iterations")
                print(f"{self.desc}: {how} in {time.monotonic() - self._start:.1f} s",
                      file=self.stream, flush=True)

    def record(self, value: float) -> None:
        """Record this iteration's objective; the loop stops after it if it has settled."""
        value = float(value)
        if self.history:
            prev = self.history[-1]
            limit = self.tol * abs(prev) if self.relative else self.tol
            self.converged = abs(value - prev) < limit
        self.history.append(value)
        if self.progress and self._bar is not None:
            self._bar.set_postfix(objective=f"{value:.6f}")
        if self._lines:
            now = time.monotonic()
            if now - self._start >= self.delay and (now - self._last >= self.every
                                                    or not self._shown):
                self._last, self._shown = now, True
                print(f"{self.desc}: iteration {len(self.history)}/{self.max_iter}, "
                      f"objective {value:.6g}, {now - self._start:.0f} s", file=self.stream,
                      flush=True)


class Progress:
    """Progress of ``total`` steps: ``update(n)`` after each, ``close()`` (or ``with``) at the end.

    Args:
        total: number of steps (0 = unknown: the lines show the count alone).
        desc: what is done ("pushing predictions").
        disable: print nothing.
        stream: where lines or the bar go (default ``sys.stderr``).
        interval: seconds between two lines (without a bar).
        use_tqdm: ``None`` = tqdm when installed and ``stream`` is a terminal or a
            notebook's, else plain lines; ``True`` = tqdm when installed; ``False`` = plain lines.
    """

    def __init__(self, total: int, desc: str, *, disable: bool = False,
                 stream: Optional[TextIO] = None, interval: float = 2.0,
                 use_tqdm: Optional[bool] = None, unit: str = "it") -> None:
        self.total, self.desc, self.disable, self.unit = int(total), desc, disable, unit
        self.stream = stream if stream is not None else sys.stderr
        self.interval, self.done = interval, 0
        self.postfix = ""
        self._start = self._last = time.monotonic()
        tqdm = None if disable else _bar_class(self.stream, use_tqdm)
        self._bar = (tqdm(total=self.total or None, desc=desc, file=self.stream, unit=unit,
                          unit_scale=unit == "B") if tqdm else None)  # bytes as kB, MB
        if self._bar is None and not disable:
            self._line("started")

    def _line(self, note: str) -> None:
        # a total of 0 with steps done is an unknown total (a download without a length)
        count = (f"{self.done} {self.unit}" if not self.total and self.done else
                 f"{self.done}/{self.total} {self.unit} "
                 f"({100.0 * self.done / self.total if self.total else 100.0:.0f}%)")
        print(f"{self.desc}: {count}, "
              f"{time.monotonic() - self._start:.1f} s, {note}{self.postfix}", file=self.stream,
              flush=True)

    def set_postfix(self, **values: Any) -> None:
        """Values shown after the count (the last epoch's loss): on the bar, or in the lines."""
        if self._bar is not None:
            self._bar.set_postfix(values)
        self.postfix = "".join(f", {k} {v}" for k, v in values.items())

    def set_total(self, total: int) -> None:
        """Change the number of steps (a total learned while running: a Keras fit over a
        dataset of unknown length knows its batches per epoch after the first epoch)."""
        self.total = int(total)
        if self._bar is not None:
            self._bar.total = self.total
            self._bar.refresh()

    def update(self, n: int = 1) -> None:
        self.done += n
        if self.disable:
            return
        if self._bar is not None:
            self._bar.update(n)
        elif time.monotonic() - self._last >= self.interval:
            self._last = time.monotonic()
            self._line("running")

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        elif not self.disable and self.interval is not None:
            self._line("done" if self.done >= self.total else "stopped")
            self.interval = None  # closed: one last line only

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Heartbeat:
    """``with Heartbeat("fitting dawid_skene"):`` shows that long work goes on.

    Nothing is shown when the block ends within ``delay`` seconds (default
    :data:`HEARTBEAT_DELAY`). After that: a tqdm timer refreshed every second (``use_tqdm``
    as in :class:`Progress`: on a terminal or in a notebook), or else a line on ``stream``
    every ``every`` seconds; when the block ends, a last line with the time it took.
    """

    def __init__(self, desc: str, *, disable: bool = False, stream: Optional[TextIO] = None,
                 delay: Optional[float] = None, every: float = 5.0,
                 use_tqdm: Optional[bool] = None) -> None:
        self.desc, self.disable, self.every = desc, disable, every
        self.delay = HEARTBEAT_DELAY if delay is None else delay
        self.stream = stream if stream is not None else sys.stderr
        self._tqdm = _bar_class(self.stream, use_tqdm)
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.shown = False

    def _run(self) -> None:
        if self._stop.wait(self.delay):
            return
        self.shown = True
        start = self._start
        if self._tqdm is not None:
            bar = self._tqdm(total=None, desc=self.desc, file=self.stream,
                             bar_format="{desc}: {elapsed} elapsed")
            while not self._stop.wait(1.0):
                bar.refresh()
            bar.close()
            return
        while True:
            print(f"{self.desc}: still running, {time.monotonic() - start:.0f} s",
                  file=self.stream, flush=True)
            if self._stop.wait(self.every):
                return

    def __enter__(self) -> "Heartbeat":
        self._start = time.monotonic()
        if not self.disable:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            if self.shown:
                print(f"{self.desc}: {'done' if exc[0] is None else 'stopped'} in "
                      f"{time.monotonic() - self._start:.1f} s", file=self.stream, flush=True)
