"""The tuner's one error, apart from its numpy code: the exception hook of `phobos.lang`
names it without importing what tuning needs."""

from __future__ import annotations


class TuneError(Exception):
    """Tuning cannot start or cannot finish: the message says why and what to do."""
