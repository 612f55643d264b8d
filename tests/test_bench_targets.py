"""bench.targets: the README's table of targets from several runs' JSON."""

from bench.targets import table


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
