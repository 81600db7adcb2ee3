"""Smoke run of ``python -m bench apf --quick``: it starts its labs, measures, prints well-formed lines.

It checks the instrument, never a speed: whether the targets are met is the benchmark's business. One
mode only (``--only apf``) to keep it short; the lines must still say what the hot client saw.
"""

from __future__ import annotations

from tests.support.bench import run_bench


def test_smoke_apf_quick() -> None:
    lines = run_bench("apf", "--only", "apf", "--seconds", "2", timeout=180)
    assert [line["metric"] for line in lines] == [
        "apf.polite.p50_ms",
        "apf.polite.p99_ms",
        "apf.polite.rejected",
        "apf.hot.rejected",
        "apf.hot.retry_after_missing",
    ]
    for line in lines:
        assert "error" not in line, line["error"]
    targets = {line["metric"]: line["target"] for line in lines}
    assert targets["apf.polite.p99_ms"] == "<= 100"
    assert targets["apf.polite.rejected"] == "== 0"
    assert targets["apf.hot.rejected"] == "> 0"
    p99 = lines[1]
    assert p99["value"] > 0 and p99["met"] is (p99["value"] <= 100)
    assert p99["requests"] == 20  # 2 s at 10 requests/s
    assert sum(p99["hot"]["codes"].values()) == p99["hot"]["requests"] > 0
