"""A readable sentence for an RRULE (dateutil has no describer): FREQ/INTERVAL, BYxxx, COUNT/UNTIL."""
from __future__ import annotations

from datetime import datetime

from .describing import plural
from .instants import iso
from .rruleparts import RRuleParts

_UNITS = {"YEARLY": "year", "MONTHLY": "month", "WEEKLY": "week", "DAILY": "day", "HOURLY": "hour",
          "MINUTELY": "minute", "SECONDLY": "second"}
_DAYS = {"MO": "Monday", "TU": "Tuesday", "WE": "Wednesday", "TH": "Thursday", "FR": "Friday",
         "SA": "Saturday", "SU": "Sunday"}
_ORDER = list(_DAYS)
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December")


def ordinal(n: int) -> str:
    """1 -> "1st", -1 -> "last", -2 -> "2nd to last"."""
    if n == -1:
        return "last"
    if n < 0:
        return f"{ordinal(-n)} to last"
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _split(value: str | None) -> list[str]:
    """Comma list, empty when absent."""
    return [v for v in (value or "").split(",") if v]


def _days(value: str) -> str:
    """BYDAY list: "Monday through Friday", "the 1st Monday", "Monday, Wednesday"."""
    items = _split(value)
    plain = [i for i in items if i in _DAYS]
    if len(plain) == len(items) and len(items) >= 3:
        idx = sorted(_ORDER.index(i) for i in items)
        if idx == list(range(idx[0], idx[-1] + 1)):
            return f"{_DAYS[_ORDER[idx[0]]]} through {_DAYS[_ORDER[idx[-1]]]}"
    words = []
    for item in items:
        day, number = item[-2:], item[:-2]
        name = _DAYS.get(day, item)
        words.append(f"the {ordinal(int(number))} {name}" if number.lstrip("+-").isdigit() else name)
    return ", ".join(words)


def _numbers(value: str | None, unit: str) -> str:
    """E.g. "day 1, 15 of the month" style lists with ordinals for negative values."""
    return ", ".join(ordinal(int(v)) if v.lstrip("+-").isdigit() else v for v in _split(value)) + f" {unit}"


def _times(parts: RRuleParts, start: datetime) -> str:
    """Clock times from BYHOUR/BYMINUTE/BYSECOND, defaulting to DTSTART's wall time."""
    freq = parts.get("FREQ")
    finer = {"HOURLY": 1, "MINUTELY": 2, "SECONDLY": 3}.get(freq or "", 0)
    hours = _split(parts.get("BYHOUR")) or ([] if finer >= 1 else [str(start.hour)])
    minutes = _split(parts.get("BYMINUTE")) or ([] if finer >= 2 else [str(start.minute)])
    seconds = _split(parts.get("BYSECOND")) or ([] if finer >= 3 else [str(start.second)])
    if hours and minutes and seconds and len(hours) * len(minutes) * len(seconds) <= 6:
        clocks = [f"{int(h):02d}:{int(m):02d}" + (f":{int(s):02d}" if int(s) else "")
                  for h in hours for m in minutes for s in seconds]
        return "at " + ", ".join(clocks)
    bits = []
    if parts.get("BYHOUR"):
        bits.append("at hour " + ", ".join(hours))
    if parts.get("BYMINUTE"):
        bits.append("at minute " + ", ".join(minutes))
    if parts.get("BYSECOND"):
        bits.append("at second " + ", ".join(seconds))
    return ", ".join(bits)


def describe_rrule(parts: RRuleParts, start: datetime) -> str:
    """Sentence for the rule; `start` is DTSTART as local wall time (supplies default clock time)."""
    freq = parts.get("FREQ") or ""
    unit = _UNITS.get(freq, freq.lower())
    interval = int(parts.get("INTERVAL") or "1") if (parts.get("INTERVAL") or "1").isdigit() else 1
    phrases = ["Every " + (unit if interval == 1 else plural(interval, unit))]
    setpos = _split(parts.get("BYSETPOS"))
    if parts.get("BYDAY"):
        days = _days(parts.get("BYDAY") or "")
        if setpos:
            which = ", ".join(ordinal(int(p)) for p in setpos if p.lstrip("+-").isdigit())
            phrases.append(f"on the {which} matching day ({days})")
        else:
            phrases.append(f"on {days}")
    elif setpos:
        phrases.append("taking position " + ", ".join(setpos) + " of each set")
    if parts.get("BYMONTHDAY"):
        phrases.append("on the " + _numbers(parts.get("BYMONTHDAY"), "day of the month"))
    if parts.get("BYYEARDAY"):
        phrases.append("on the " + _numbers(parts.get("BYYEARDAY"), "day of the year"))
    if parts.get("BYWEEKNO"):
        phrases.append("in week " + ", ".join(_split(parts.get("BYWEEKNO"))))
    if parts.get("BYMONTH"):
        months = _split(parts.get("BYMONTH"))
        names = [_MONTHS[int(m) - 1] if m.isdigit() and 1 <= int(m) <= 12 else m for m in months]
        phrases.append("in " + ", ".join(names))
    times = _times(parts, start)
    if times:
        phrases.append(times)
    if parts.get("COUNT"):
        phrases.append(f"{parts.get('COUNT')} times in total")
    if parts.until_utc is not None:
        phrases.append(f"until {iso(parts.until_utc, 'seconds')}")
    elif parts.get("UNTIL"):
        phrases.append(f"until {parts.get('UNTIL')}")
    return ", ".join(phrases)
