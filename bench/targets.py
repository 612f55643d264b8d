"""The throughput targets and their judgement, and the targets of several bench runs side by side, as the
Markdown table the docs quote.

    python -m bench.targets bench/runs/run13.json bench/runs/run14.json
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.figures import fmt

Row = dict[str, Any]


@dataclass(frozen=True)
class ThroughputTarget:
    """The default worker's fires per second per worker at least `limit` times a bare RQ baseline's jobs per
    second per worker (a kind of scenario 1's "rq" results), with the same number of workers, in the same run."""

    baseline: str
    limit: float
    judged: bool = True  # False: a former target, printed beside the others with its result, counting for nothing


THROUGHPUT_TARGETS = (
    # SimpleWorker whose no-op job records its run (INSERT committed at its start, UPDATE at its end) in the same
    # database with the same driver: the least any scheduler with a durable history does.
    ThroughputTarget("durable", 0.8),
    # The target before the durable baseline: SimpleWorker on a no-op job, which writes nothing durable.
    ThroughputTarget("simple", 0.8, judged=False),
    ThroughputTarget("forking", 2.0),
)


def at_least(ratio: float | None, limit: float) -> bool | None:
    """Whether a ratio meets its floor; None when either side could not be measured."""
    return None if ratio is None else ratio >= limit


# Scenario 8 (history): a request with ten million runs behind it within this many times the same request with
# 1,000 runs in all; a link's CPU within this many times an empty database's; the steady load's lateness p99
# while the pruner deletes what is past retention; and once it has caught up, the database grows by at most
# this share of what the new runs would take had they not reused the space pruning freed.
HISTORY_REQUEST = 1.5
HISTORY_LINK_CPU = 1.1
HISTORY_PRUNING_P99_MS = 100.0
HISTORY_GROWTH_SHARE = 0.1


# Scenario 9 (mixed): with more slots than slow tasks running at once, the quick schedules' lateness p99 at most
# this; with the slow workflow on its own queue and worker, at most this many times the same quick load alone.
MIXED_ROOMY_P99_MS = 100.0
MIXED_OWN_QUEUE_RATIO = 1.2

# Scenario 10 (estate, issue 51): at a million schedules with the workers running, link lateness p99 at most
# this, and Redis at most this many bytes a schedule once every link is made.
ESTATE_P99_MS = 100.0
ESTATE_REDIS_BYTES = 600


def at_most(value: float | None, baseline: float | None, limit: float) -> bool | None:
    """Whether `value` is within `limit` times `baseline`; None when either could not be measured."""
    if value is None or baseline is None or baseline <= 0:
        return None
    return value <= limit * baseline


def _figure(row: Row) -> str:
    """The figure's name without what varies from run to run (a floor's seconds, the exact link count)."""
    figure = re.sub(r" \([^)]*s Recur[^)]*\)", "", row["figure"])
    return _round_links(figure)


def _round_links(text: str) -> str:
    """A worker stops a few links past its mark ("after 100,036 links"): name the mark."""
    def mark(match: re.Match[str]) -> str:
        count = int(match[1].replace(",", ""))
        return f"after {round(count, 2 - len(str(count))):,} links"
    return re.sub(r"after ([\d,]+) links", mark, text)


def _key(row: Row) -> tuple[str, str, str, str]:
    return row.get("database") or "sqlite", row["scenario"], _figure(row), _round_links(row["baseline"])


def _label(row: Row) -> str:
    label = f"{row['scenario'].split(' ', 1)[1]}: {_figure(row)}"
    if row["target"].startswith("ratio") and row["scenario"] != "7 memory":
        label += f" vs {row['baseline']}"
    return label


def _cell(row: Row | None) -> str:
    if row is None:
        return "-"
    verdicts = {True: "yes", False: "**no**", None: "n/a"} if row.get("judged", True) else {True: "yes", False: "no"}
    cell = f"{verdicts[row['pass']]}: {fmt(row['recur'])}"
    shows_ratio = row["target"].startswith("ratio") or row["target"].endswith("x floor")
    if shows_ratio and row.get("ratio") is not None:
        cell += f" ({row['ratio']:.2f} ×)"
    return cell


def table(runs: list[dict[str, Any]], names: list[str]) -> str:
    by_run = [{_key(row): row for row in run["rows"] if row.get("target")} for run in runs]
    keys: list[tuple[str, str, str, str]] = []
    for rows in by_run:
        keys += [key for key in rows if key not in keys]
    lines = ["| database | figure | target | " + " | ".join(names) + " |",
             "|---|---|---|" + "---|" * len(names)]
    for key in keys:
        first = next(rows[key] for rows in by_run if key in rows)
        cells = [_cell(rows.get(key)) for rows in by_run]
        lines.append(f"| {key[0]} | {_label(first)} | {first['target']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    paths = [Path(arg) for arg in (sys.argv[1:] if argv is None else argv)]
    if not paths:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    runs = [json.loads(path.read_text()) for path in paths]
    for path, run in zip(paths, runs, strict=True):
        verdict = "every target holds" if run.get("all_targets_pass") else "not every target holds"
        print(f"<!-- {path.name}: {run['when']}, {run['seconds']:.0f} s, {run['machine']['cpu']}, {verdict} -->")
    print(table(runs, [path.stem.replace("run", "run ") for path in paths]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
