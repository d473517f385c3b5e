"""A fixed clock for the getters: the instant both sides' ``datetime.now`` reads, and the
host's local time zone (``TZ``), for the parity tests of time-dependent getters."""

from __future__ import annotations

import os
import time
from datetime import datetime, tzinfo
from typing import Any

from osworld_gym.evaluation.getters import base as getters_module
from osworld_gym.evaluation.getters import relative_time as getters_time


class Clock:
    """A fixed instant for both sides' ``datetime.now``, and the host's local time zone."""

    def __init__(self, instant: datetime, local_zone: str = "UTC") -> None:
        self.instant, self.local_zone = instant, local_zone

    def datetime_class(self) -> type[datetime]:
        instant = self.instant

        class Fixed(datetime):
            @classmethod
            def now(cls, tz: tzinfo | None = None) -> Fixed:  # type: ignore[override]
                moment = instant.astimezone(tz) if tz is not None else instant.astimezone()
                fields = moment.timetuple()[:6]
                return cls(*fields, moment.microsecond, tzinfo=moment.tzinfo if tz else None)

        return Fixed


class our_clock:  # noqa: N801 - a context manager used like a function
    """Our getters' ``datetime`` at the clock's instant, and ``TZ`` its local zone."""

    def __init__(self, clock: Clock | None) -> None:
        self.clock = clock
        self.saved: tuple[Any, Any, str | None] | None = None

    def __enter__(self) -> None:
        if self.clock is None:
            return
        self.saved = (getters_module.datetime, getters_time.datetime, os.environ.get("TZ"))
        fixed = self.clock.datetime_class()
        getters_module.datetime = fixed  # type: ignore[misc]
        getters_time.datetime = fixed  # type: ignore[misc]
        os.environ["TZ"] = self.clock.local_zone
        time.tzset()

    def __exit__(self, *exc: object) -> None:
        if self.saved is None:
            return
        getters_module.datetime, getters_time.datetime, zone = self.saved  # type: ignore[misc]
        if zone is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = zone
        time.tzset()
