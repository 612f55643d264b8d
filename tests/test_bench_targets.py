"""bench.targets: the docs' table of targets (docs/performance.md) from several runs' JSON."""

from bench.report import build_rows
from bench.targets import at_least, table


def _row(figure: str, recur: float, baseline: str, ratio: float | None, target: str, passed: bool | None,
         scenario: str = "7 memory") -> dict[str, object]:
    return {"scenario": scenario, "figure": figure, "recur": recur, "baseline": baseline, "ratio": ratio,
            "target": target, "pass": passed, "database": "postgres"}


def test_rows_of_runs_line_up_although_their_marks_differ() -> None:
    first = {"rows": [_row("default worker RSS after 100,036 links", 87.2, "after 1,004 links", 1.02,
                           "ratio <= 1.2", True)]}
    second = {"rows": [_row("default worker RSS after 100,011 links", 93.3, "after 1,001 links", 1.31,
                            "ratio <= 1.2", False)]}
    lines = table([first, second], ["run A", "run B"]).splitlines()
    assert lines[2] == ("| postgres | memory: default worker RSS after 100,000 links | ratio <= 1.2 "
                        "| yes: 87.20 (1.02 ×) | **no**: 93.30 (1.31 ×) |")
    assert len(lines) == 3


def test_a_row_missing_from_a_run_shows_a_dash_and_untargeted_rows_are_left_out() -> None:
    first = {"rows": [_row("lateness p99", 4.9, "Recur --simple worker", 2.0, "<= 100 ms", True, "2 steady load"),
                      _row("lateness p50", 2.0, "Recur --simple worker", 1.0, "", None, "2 steady load")]}
    lines = table([first, {"rows": []}], ["run A", "run B"]).splitlines()
    assert lines[2:] == ["| postgres | steady load: lateness p99 | <= 100 ms | yes: 4.90 | - |"]


def _throughput(default: float, durable: float, simple: float, forking: float) -> dict[str, object]:
    """Scenario 1's results for two workers, as `python -m bench` stores them (fires or jobs per second)."""
    def rate(per_worker: float) -> dict[str, float]:
        return {"per_second": per_worker * 2, "per_worker": per_worker}

    return {"throughput": {
        "recur": {"defaultx2": rate(default), "simplex2": rate(default), "forkx2": rate(forking)},
        "rq": {"durablex2": rate(durable), "simplex2": rate(simple), "forkingx2": rate(forking)},
    }}


def _default_rows(results: dict[str, object]) -> dict[str, dict[str, object]]:
    rows = build_rows(results, 2, "postgres")
    return {str(r["baseline"]): r for r in rows if str(r["figure"]).startswith("fires/s per worker, default")}


def test_the_throughput_target_is_the_durable_baseline_and_the_no_op_one_is_shown_but_not_judged() -> None:
    rows = _default_rows(_throughput(default=80.0, durable=100.0, simple=200.0, forking=30.0))
    durable = rows["bare RQ SimpleWorker x2 no-op + durable run record"]
    assert (durable["target"], durable["ratio"], durable["pass"], durable["judged"]) == ("ratio >= 0.8", 0.8, True,
                                                                                         True)
    former = rows["bare RQ SimpleWorker x2 no-op"]
    assert (former["target"], former["ratio"], former["pass"], former["judged"]) == (
        "ratio >= 0.8 (former target, not judged)", 0.4, False, False)
    assert list(rows) == ["bare RQ SimpleWorker x2 no-op + durable run record", "bare RQ SimpleWorker x2 no-op",
                          "bare RQ Worker x2 no-op"]


def test_the_durable_target_fails_below_its_floor_and_has_no_verdict_without_its_baseline() -> None:
    below = _default_rows(_throughput(default=79.0, durable=100.0, simple=90.0, forking=30.0))
    assert below["bare RQ SimpleWorker x2 no-op + durable run record"]["pass"] is False
    assert below["bare RQ SimpleWorker x2 no-op"]["pass"] is True
    missing = _throughput(default=80.0, durable=100.0, simple=90.0, forking=30.0)
    missing["throughput"]["rq"]["durablex2"] = {"error": "TimeoutError: the RQ backlog"}  # type: ignore[index]
    durable = _default_rows(missing)["bare RQ SimpleWorker x2 no-op + durable run record"]
    assert (durable["pass"], durable["baseline_value"]) == (None, "TimeoutError: the RQ backlog")
    assert at_least(None, 0.8) is None and at_least(0.8, 0.8) is True and at_least(0.79, 0.8) is False


def test_a_target_that_is_not_judged_shows_its_result_without_the_bold_of_a_miss() -> None:
    run = {"rows": [r for r in build_rows(_throughput(80.0, 100.0, 200.0, 30.0), 2, "postgres") if r["target"]]}
    lines = table([run], ["run A"]).splitlines()
    vs = "throughput: fires/s per worker, default (isolating) x2 vs bare RQ SimpleWorker x2 no-op"
    assert lines[2:] == [
        f"| postgres | {vs} + durable run record | ratio >= 0.8 | yes: 80.00 (0.80 ×) |",
        f"| postgres | {vs} | ratio >= 0.8 (former target, not judged) | no: 80.00 (0.40 ×) |",
        "| postgres | throughput: fires/s per worker, default (isolating) x2 vs bare RQ Worker x2 no-op | ratio >= 2 "
        "| yes: 80.00 (2.67 ×) |",
    ]
