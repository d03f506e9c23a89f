"""Reading an uploaded dataset file (JSONL or CSV) row by row, with every limit checked while
reading: an upload is hostile until proven otherwise.

- Streamed: the file is decoded and parsed one line (or CSV record) at a time, and the row
  limit stops the reading at the first row too many, so a 20 MB file of ``{}`` lines costs one
  row's memory per row kept, never all of them.
- Bounded: a JSONL line over IMPORT_MAX_LINE_BYTES, a CSV field over the csv module's field
  limit (128 KiB) and JSON nested deeper than IMPORT_MAX_JSON_DEPTH are row errors.
- Strict: dates must exist (2026-02-30 does not) and lie between DATE_MIN and now + a day;
  numbers must be finite (NaN and Infinity are refused, in JSON and in CSV cells); text may
  not hold NUL or lone surrogates (PostgreSQL refuses both).

Every problem is reported with its line number; the caller rejects the whole file (one 400 with
the first IMPORT_MAX_ERRORS_SHOWN problems). Messages quote at most a short prefix of a value.

Hand-written on purpose: the stdlib csv and json parsers do the parsing; what is added are the
limits, which no maintained library checks on a streamed csv/json reader in one place."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from core.errors import ApplicationError

# The dataset columns that hold JSON objects (feedback.services.datasets writes them as JSON text
# in CSV and Parquet).
JSON_COLUMNS = ("features", "sub_scores", "model_versions")
IMPORT_MAX_ROWS: int = getattr(settings, "FEEDBACK_IMPORT_MAX_ROWS", 100_000)
IMPORT_MAX_TEXT_CHARS: int = getattr(settings, "POST_TEXT_MAX_CHARS", 10_000)
IMPORT_MAX_ERRORS_SHOWN = 20
# A JSONL line holds one example: text (10,000 characters, up to 4 bytes each), a preview and a
# few small dicts. The csv module's own field limit (128 KiB) bounds a CSV row the same way.
IMPORT_MAX_LINE_BYTES = 256 * 1024
# A row is an object whose JSON columns are flat dicts: {"row": {"features": {"x": 1}}} is 3.
IMPORT_MAX_JSON_DEPTH = 4
DATE_MIN = datetime(1990, 1, 1, tzinfo=UTC)
ECHO_CHARS = 40
LABEL_ALIASES = {"spam": "spam", "ham": "ham", "1": "spam", "0": "ham", "true": "spam", "false": "ham"}


class RowError(ValueError):
    """One row's problem; the message is shown after "line N: "."""


@dataclass
class ImportProblems:
    """The first IMPORT_MAX_ERRORS_SHOWN problems (with line numbers) and how many there were."""

    shown: list[str] = field(default_factory=list)
    count: int = 0

    def add(self, line: int, message: str) -> None:
        self.count += 1
        if len(self.shown) < IMPORT_MAX_ERRORS_SHOWN:
            self.shown.append(f"line {line}: {message}")

    def listing(self) -> list[str]:
        more = self.count - len(self.shown)
        return [*self.shown, f"... and {more} more"] if more else list(self.shown)


def echo(value: Any) -> str:
    """A short, printable prefix of a client value for an error message."""
    text = repr(value)
    if len(text) > ECHO_CHARS:
        text = text[: ECHO_CHARS - 1] + "\u2026"
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _reject_constant(name: str) -> Any:
    raise RowError(f"{name} is not a finite number")


def _depth_within(value: Any, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return False
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return True


def strict_json(text: str, *, depth: int) -> Any:
    """json.loads without NaN/Infinity and nesting at most ``depth`` deep."""
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except RecursionError as exc:
        raise RowError("JSON nested too deeply") from exc
    except json.JSONDecodeError as exc:
        raise RowError(f"not valid JSON ({exc.msg} at column {exc.colno})") from exc
    if not _depth_within(value, depth):
        raise RowError(f"JSON nested deeper than {depth} levels")
    return value


def _text_problem(value: str) -> str | None:
    if "\x00" in value:
        return "holds a NUL character"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "holds a lone surrogate (invalid Unicode)"
    return None


def check_text(value: Any, where: str) -> None:
    """Every string in ``value`` (keys included) is storable text."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            problem = _text_problem(item)
            if problem:
                raise RowError(f"{where} {problem}")
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def strict_datetime(raw: Any, column: str) -> datetime:
    """An ISO 8601 instant that exists and lies in [DATE_MIN, now + 1 day]; naive means UTC."""
    try:
        parsed = parse_datetime(str(raw))
    except ValueError as exc:  # a well-formed date that does not exist: 2026-02-30
        raise RowError(f"{column} is not a valid date ({exc})") from exc
    if parsed is None:
        raise RowError(f"{column} is not an ISO 8601 datetime")
    if timezone.is_naive(parsed):
        parsed = parsed.replace(tzinfo=UTC)
    try:
        parsed = parsed.astimezone(UTC)  # 0001-01-01T00:00:00+05:00 is before year 1 in UTC
    except OverflowError as exc:
        raise RowError(f"{column} is out of range") from exc
    if not DATE_MIN <= parsed <= timezone.now() + timedelta(days=1):
        raise RowError(f"{column} must be between {DATE_MIN.date().isoformat()} and tomorrow")
    return parsed


def finite_number(raw: Any, column: str) -> float:
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        raise RowError(f"{column} is not a number")
    try:
        value = float(raw)
    except (ValueError, OverflowError) as exc:
        raise RowError(f"{column} is not a number") from exc
    if not math.isfinite(value):
        raise RowError(f"{column} must be a finite number")
    return value


def _json_column(row: dict[str, Any], column: str) -> dict[str, Any]:
    value = row.get(column) or {}
    if isinstance(value, str):
        value = strict_json(value, depth=IMPORT_MAX_JSON_DEPTH - 1) if value.strip() else {}
    if not isinstance(value, dict):
        raise RowError(f"{column} is not a JSON object")
    return value


def validate_row(row: dict[str, Any]) -> dict[str, Any]:
    """The example fields of one parsed row, or RowError."""
    check_text(row, "the row")
    text = row.get("text")
    if not isinstance(text, str) or not text.strip():
        raise RowError("text is missing or empty")
    if len(text) > IMPORT_MAX_TEXT_CHARS:
        raise RowError(f"text longer than {IMPORT_MAX_TEXT_CHARS} characters")
    label = LABEL_ALIASES.get(str(row.get("label", "")).strip().lower())
    if label is None:
        raise RowError(f"label must be spam or ham (or 1/0), got {echo(row.get('label'))}")
    raw_at = row.get("decided_at")
    decided_at = strict_datetime(raw_at, "decided_at") if raw_at else timezone.now()
    parsed_json = {column: _json_column(row, column) for column in JSON_COLUMNS}
    for key, value in parsed_json["sub_scores"].items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise RowError("sub_scores values must be numbers")
        finite_number(value, f"sub_scores.{echo(key)}")
    raw_final = row.get("final_score")
    final_score = None if raw_final in (None, "") else finite_number(raw_final, "final_score")
    return {
        "text": text,
        "label": label,
        "decided_at": decided_at,
        "source": str(row.get("source") or "")[:60],
        "author_external_id": str(row.get("author_external_id") or row.get("author") or "")[:255],
        "post_external_id": str(row.get("post_external_id") or row.get("id") or "")[:255],
        "preview_text": str(row.get("preview_text") or "")[: IMPORT_MAX_TEXT_CHARS * 5],
        "url": str(row.get("url") or "")[:2048],
        "reason_code": str(row.get("reason_code") or "")[:64],
        "features": parsed_json["features"],
        "sub_scores": parsed_json["sub_scores"],
        "model_versions": parsed_json["model_versions"],
        "final_score": final_score,
        "model_set": str(row.get("model_set") or "")[:200],
    }


def _too_many_rows() -> ApplicationError:
    return ApplicationError(
        f"The file has more than {IMPORT_MAX_ROWS} rows.",
        code="import_too_large",
        fields={"file": [f"more than {IMPORT_MAX_ROWS} rows"]},
    )


def _jsonl_rows(content: bytes, problems: ImportProblems) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each line decoded and parsed on its own (utf-8, a BOM on the first line dropped)."""
    for lineno, raw in enumerate(io.BytesIO(content), start=1):
        if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        if len(raw) > IMPORT_MAX_LINE_BYTES:
            problems.add(lineno, f"longer than {IMPORT_MAX_LINE_BYTES} bytes")
            continue
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.add(lineno, f"not UTF-8 (byte {exc.start})")
            continue
        if not line.strip():
            continue
        try:
            obj = strict_json(line, depth=IMPORT_MAX_JSON_DEPTH)
        except RowError as exc:
            problems.add(lineno, str(exc))
            continue
        if not isinstance(obj, dict):
            problems.add(lineno, "expected a JSON object")
            continue
        yield lineno, obj


def _csv_rows(content: bytes, problems: ImportProblems) -> Iterator[tuple[int, dict[str, Any]]]:
    text = io.TextIOWrapper(io.BytesIO(content), encoding="utf-8-sig", newline="")
    reader = csv.DictReader(text)
    try:
        fieldnames = reader.fieldnames
        if not fieldnames or "text" not in fieldnames or "label" not in fieldnames:
            raise ApplicationError(
                "A CSV import needs a header row with at least the columns text and label.",
                code="import_invalid",
                fields={"file": ["missing text/label columns"]},
            )
        while True:
            row = next(reader, None)
            if row is None:
                return
            # DictReader files surplus cells under None: a list, not a column.
            yield reader.line_num, {k: v for k, v in row.items() if k is not None}
    except csv.Error as exc:  # a field over the csv module's limit, a NUL in the file ...
        # line_num counts the lines of records read whole: the failing one is the next.
        problems.add(reader.line_num + 1, f"not valid CSV ({exc})")
    except UnicodeDecodeError as exc:
        problems.add(reader.line_num + 1, f"not UTF-8 (byte {exc.start} of its chunk)")


def read_rows(content: bytes, fmt: str) -> tuple[list[dict[str, Any]], ImportProblems, int]:
    """Valid rows, the problems found and the number of rows read. Raises ApplicationError when
    the file has more than IMPORT_MAX_ROWS rows (as soon as it reads one too many) or when its
    format is unknown or its CSV header lacks text/label."""
    problems = ImportProblems()
    if fmt == "jsonl":
        rows = _jsonl_rows(content, problems)
    elif fmt == "csv":
        rows = _csv_rows(content, problems)
    else:
        raise ApplicationError(f"Unknown import format {echo(fmt)}; use jsonl or csv.", code="import_invalid")
    valid: list[dict[str, Any]] = []
    count = 0
    for lineno, row in rows:
        count += 1
        if count > IMPORT_MAX_ROWS:
            raise _too_many_rows()
        try:
            valid.append(validate_row(row))
        except RowError as exc:
            problems.add(lineno, str(exc))
    return valid, problems, count
