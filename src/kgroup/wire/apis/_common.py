"""Helpers of the per-API translations."""

from __future__ import annotations

import datetime
from typing import Any

from kgroup.wire.api_keys import ApiKey
from kgroup.wire.codec import request_class, response_class

__all__ = ["ms", "request_entity", "response_entity"]


def ms(value: Any) -> int:
    """Milliseconds of a kio duration (a ``timedelta``) or of a plain number."""
    if isinstance(value, datetime.timedelta):
        return int(value / datetime.timedelta(milliseconds=1))
    return int(value)


def request_entity(api_key: ApiKey, version: int) -> type[Any]:
    cls = request_class(api_key, version)
    if cls is None:
        raise ValueError(f"{api_key.title} v{version} has no request schema")
    return cls


def response_entity(api_key: ApiKey, version: int) -> type[Any]:
    cls = response_class(api_key, version)
    if cls is None:
        raise ValueError(f"{api_key.title} v{version} has no response schema")
    return cls
