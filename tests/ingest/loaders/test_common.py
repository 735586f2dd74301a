"""parse_date: every date form the loaders meet, and what is not a date."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest

from rag_core.ingest.loaders.common import parse_date


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (date(2021, 3, 4), "2021-03-04"),
        (datetime(2021, 3, 4, 23, 59), "2021-03-04"),
        (datetime(2021, 3, 4, 23, 30, tzinfo=timezone(timedelta(hours=-5))), "2021-03-04"),  # not moved to UTC
        ("2021-03-04", "2021-03-04"),
        ("  2021-03-04T10:11:12.345Z ", "2021-03-04"),
        ("2021-03-04T23:30:00-05:00", "2021-03-04"),
        ("2021-03-04 10:11", "2021-03-04"),
        ("20210304", "2021-03-04"),
        ("2021-03", "2021-03-01"),
        ("2021", "2021-01-01"),
        ("D:20230115093000+01'00'", "2023-01-15"),
        ("D:20230115093000+01'00", "2023-01-15"),
        ("D:20230115093000Z", "2023-01-15"),
        ("20230115093000-08'00'", "2023-01-15"),  # no "D:"
        ("D:2023", "2023-01-01"),
        ("D:202305", "2023-05-01"),
        ("Tue, 15 Nov 1994 08:12:31 GMT", "1994-11-15"),
        ("15 Nov 1994 08:12:31 +0100", "1994-11-15"),
        (0, "1970-01-01"),
        (1700000000, "2023-11-14"),
        (1700000000.9, "2023-11-14"),
        (2019, "2019-01-01"),  # a year, not 2019 seconds after 1970
    ],
)
def test_parse_date_forms(value, expected):
    assert parse_date(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        None, "", "   ", "garbage", "D:", "D:2023AB", "2023-13", "2023-02-30", "D:20231301", "1994 was a year",
        True, float("nan"), float("inf"), 10**20, [2021], {"date": "2021-01-01"},
        "1899-12-31", date(1, 1, 1), "D:18000101", -10**10,  # before 1900
        "9999-12-31", 4102444800,  # 2100, far ahead
    ],
)
def test_parse_date_rejects(value):
    assert parse_date(value) is None


def test_parse_date_allows_one_day_ahead_only():
    today = datetime.now(timezone.utc).date()
    assert parse_date(today) == today.isoformat()
    assert parse_date(today + timedelta(days=1)) == (today + timedelta(days=1)).isoformat()  # zones ahead of UTC
    assert parse_date(today + timedelta(days=2)) is None
    assert parse_date((today + timedelta(days=2)).isoformat()) is None
