"""The explorer's JSON answers: bodies as bytes, NaN never written (JSON has none)."""

from __future__ import annotations

import json
from typing import Any

from abrank.serve.query_table import QueryDetail, QueryPage


def dumps(value: Any) -> bytes:
    """``value`` as UTF-8 JSON (strict: a NaN left in it is a bug, not a token)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, default=str).encode("utf-8")


def experiments_body(experiments: list[dict[str, Any]]) -> bytes:
    """``/api/experiments``: every experiment with its status, readouts and dates (the
    index's rows without their HTML trend)."""
    return dumps(
        {"experiments": [{k: v for k, v in item.items() if k != "trend"} for item in experiments]}
    )


def queries_body(page: QueryPage) -> bytes:
    """``/api/experiments/NAME/queries``: ``{"total": n, "rows": [...], ...}``."""
    return dumps(page.to_dict())


def query_body(detail: QueryDetail) -> bytes:
    """``/api/experiments/NAME/queries/QID``: the ``readout.query`` rows (``rows``) and the
    query's rows of the query table (``query``)."""
    return dumps(detail.to_dict())


def error_body(status: int, message: str, **fields: Any) -> bytes:
    """An error as JSON: ``{"status", "error", ...fields}``."""
    return dumps({"status": status, "error": message, **fields})
