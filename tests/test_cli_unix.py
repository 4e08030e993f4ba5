"""The command line as a Unix tool (defect hunt of 29 November): progress on a stderr that is
not a terminal (a log file, a pipe) is plain lines, not a bar redrawn with carriage returns;
Ctrl-C while the label model's libraries load is one line and exit 130, as during the fit."""
import io

import pytest

from crowd_keras.progress import Heartbeat, Progress


class _Terminal(io.StringIO):
    """A text stream that says it is a terminal (a bar is drawn on it)."""

    def isatty(self) -> bool:
        return True


def test_progress_on_a_stream_that_is_no_terminal_is_lines_without_carriage_returns():
    pytest.importorskip("tqdm")
    log = io.StringIO()   # stderr redirected to a file: `crowd-keras aggregate ... 2> log`
    with Progress(5, "pushing predictions", stream=log, interval=0.0) as bar:
        for _ in range(5):
            bar.update()
    beat = io.StringIO()
    with Heartbeat("fitting ebcc", stream=beat, delay=0.0, every=0.05):
        pass
    for text in (log.getvalue(), beat.getvalue()):
        assert "\r" not in text and "\x1b" not in text, repr(text)
    assert log.getvalue().splitlines()[-1].startswith("pushing predictions: 5/5")
    assert beat.getvalue().splitlines()[-1].startswith("fitting ebcc: done in")
    # on a terminal the bar is drawn, as before
    tty = _Terminal()
    with Progress(5, "pushing predictions", stream=tty) as bar:
        bar.update(5)
    assert "\r" in tty.getvalue() and "5/5" in tty.getvalue()
