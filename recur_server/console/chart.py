"""A timeline of recent runs as an SVG drawn on the server: lateness (start minus nominal time) above,
duration below, one column per run coloured by its outcome, and a time axis under them (the nominal times
of a few columns, in the page's zone). Readable without JavaScript; each mark has a <title> with its
figures."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from zoneinfo import ZoneInfo

from markupsafe import Markup

COLOURS = {"succeeded": "#2e7d32", "failed": "#c62828", "timed_out": "#ef6c00", "skipped": "#9e9e9e",
           "running": "#1565c0", "missed": "#6d4c41", "cancelled": "#757575"}


@dataclass(frozen=True)
class Point:
    nominal: datetime
    lateness: float  # seconds
    duration: float | None  # seconds; None while running
    status: str


def seconds_text(value: float) -> str:
    if value < 1:
        return f"{value * 1000:.0f} ms"
    if value < 120:
        return f"{value:.1f} s"
    return f"{value / 60:.1f} min"


AXIS_LABELS = 5  # at most this many times under the chart


def axis_labels(nominals: list[datetime], zone: str = "UTC") -> list[tuple[int, str]]:
    """(column, text) of the time axis under columns of runs in nominal order: the first and last runs and
    evenly spaced ones between, in `zone`, as precise as the span they cover needs (seconds within ten
    minutes, the date past a day)."""
    if not nominals:
        return []
    tz = UTC if zone == "UTC" else ZoneInfo(zone)
    local = [n.astimezone(tz) for n in nominals]
    span = (nominals[-1] - nominals[0]).total_seconds()
    shape = "%H:%M:%S" if span < 600 else "%H:%M" if local[0].date() == local[-1].date() else "%m-%d %H:%M"
    count = min(AXIS_LABELS, len(nominals))
    columns = sorted({round(i * (len(nominals) - 1) / max(count - 1, 1)) for i in range(count)})
    return [(c, local[c].strftime(shape)) for c in columns]


def timeline(points: list[Point], width: int = 720, panel: int = 90, zone: str = "UTC") -> Markup:
    """Two panels (lateness, duration), a column per run in the order of their nominal times (a backfill's
    runs among the ticks they stand for), over a time axis in `zone`."""
    points = sorted(points, key=lambda p: p.nominal)
    left, gap, top = 64, 26, 18
    height = top + panel + gap + panel + 36
    if not points:
        return Markup(f'<svg class="chart" viewBox="0 0 {width} 60" role="img" aria-label="no runs yet">'
                      '<text x="10" y="35">No runs yet.</text></svg>')
    step = (width - left - 10) / len(points)
    bar = max(2.0, min(18.0, step * 0.7))
    parts = [f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" '
             f'aria-label="lateness and duration of the last {len(points)} runs">']
    for title, values, y0 in (("lateness", [p.lateness for p in points], top),
                              ("duration", [p.duration or 0.0 for p in points], top + panel + gap)):
        peak = max(values) or 1.0
        parts.append(f'<text class="axis" x="4" y="{y0 + 10}">{title}</text>')
        parts.append(f'<text class="axis" x="4" y="{y0 + 24}">max {escape(seconds_text(max(values)))}</text>')
        parts.append(f'<line x1="{left}" y1="{y0 + panel}" x2="{width - 10}" y2="{y0 + panel}" class="base"/>')
        for index, (point, value) in enumerate(zip(points, values, strict=True)):
            h = max(1.0, panel * value / peak)
            x = left + index * step + (step - bar) / 2
            label = (f"{point.nominal.strftime('%Y-%m-%d %H:%M:%S')} UTC, {point.status}, "
                     f"{title} {seconds_text(value) if title == 'lateness' or point.duration is not None else '-'}")
            parts.append(f'<rect x="{x:.1f}" y="{y0 + panel - h:.1f}" width="{bar:.1f}" height="{h:.1f}" '
                         f'fill="{COLOURS.get(point.status, "#455a64")}"><title>{escape(label)}</title></rect>')
    axis = top + panel + gap + panel
    parts.append(f'<text class="axis" x="4" y="{axis + 26}">{escape(zone)}</text>')
    for column, text in axis_labels([p.nominal for p in points], zone):
        x = left + column * step + step / 2
        anchor = ("middle" if len(points) == 1 or 0 < column < len(points) - 1
                  else "start" if column == 0 else "end")
        parts.append(f'<line x1="{x:.1f}" y1="{axis}" x2="{x:.1f}" y2="{axis + 4}" class="base"/>')
        parts.append(f'<text class="axis tick" x="{x:.1f}" y="{axis + 16}" text-anchor="{anchor}">'
                     f'{escape(text)}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))
