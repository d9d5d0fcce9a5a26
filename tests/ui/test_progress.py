import io

from hotdogbench_core.ui.progress import PLAIN_EVERY_S, ProgressBar


class Clock:
    t = 0.0

    def __call__(self):
        return self.t


class TTY(io.StringIO):
    def isatty(self):
        return True


def test_plain_lines_every_few_seconds_when_not_a_terminal():
    clock, out = Clock(), io.StringIO()
    bar = ProgressBar("m", 100, stream=out, clock=clock)
    for _ in range(10):
        clock.t += 1.0
        bar.advance(5, "limit 8")
    lines = out.getvalue().splitlines()
    assert len(lines) == 10 // int(PLAIN_EVERY_S)  # at 1 s and 6 s... one line per 5 s, no redraw codes
    assert all("\r" not in l for l in lines)
    assert lines[-1].startswith("m [") and "30/100" in lines[-1] and "limit 8" in lines[-1]
    bar.close()
    assert out.getvalue().splitlines()[-1].split()[2] == "50/100"


def test_terminal_redraws_in_place_with_rate_and_eta():
    clock, out = Clock(), TTY()
    bar = ProgressBar("m", 40, stream=out, clock=clock)
    clock.t = 2.0
    bar.advance(10)
    text = out.getvalue()
    assert text.startswith("\r\x1b[2K") and "10/40" in text and "5.0/s" in text and "6s left" in text
    bar.close()
    assert out.getvalue().endswith("\n")


def test_disabled_prints_nothing():
    out = io.StringIO()
    bar = ProgressBar("m", 3, stream=out, enabled=False)
    bar.advance(3)
    bar.close()
    assert out.getvalue() == ""
