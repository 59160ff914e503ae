import pytest

from learner.progress import RateWindow


def test_rates_cover_the_span_since_the_last_report():
    window = RateWindow(min_span_s=2.5, now=100.0, counts=(0, 0))
    assert window.advance(105.0, (500, 10)) == (5.0, (500, 10))
    assert window.advance(110.0, (1500, 30)) == (5.0, (1000, 20))


def test_a_report_soon_after_the_last_reaches_back_to_the_one_before():
    # The last line at shutdown: one update landed 0.3 s after the previous report.
    window = RateWindow(min_span_s=2.5, now=100.0, counts=(0,))
    window.advance(105.0, (500,))
    span_s, (frames,) = window.advance(105.3, (600,))
    assert span_s == pytest.approx(5.3) and frames == 600


def test_the_first_report_uses_what_it_has_however_short():
    window = RateWindow(min_span_s=2.5, now=100.0, counts=(0,))
    span_s, (frames,) = window.advance(100.5, (40,))
    assert span_s == pytest.approx(0.5) and frames == 40
