"""What a group kind's handler throws to answer a request without writing anything: :class:`ApiError`
(Kafka's ``ApiException``), shared by the KIP-848 and KIP-932 handlers, and the lookups every kind makes
the same way (:func:`member_of`, :func:`unknown_member`, :func:`timer_member`) and the request checks
they share (:func:`not_blank`, :func:`refusal`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

from kgroup.model import ErrorCode

__all__ = ["ApiError", "member_of", "not_blank", "refusal", "timer_member", "unknown_member"]

_M = TypeVar("_M", covariant=True)
_R = TypeVar("_R")


class ApiError(Exception):
    """An ``ApiException``: the request is answered with ``code`` and ``message``, nothing is written."""

    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def not_blank(value: str | None, message: str) -> None:
    """INVALID_REQUEST with ``message`` when ``value`` is given but empty or all white space (Kafka's
    ``throwIfEmptyString``)."""
    if value is not None and not value.strip():
        raise ApiError(ErrorCode.INVALID_REQUEST, message)


def refusal(check: Callable[[], None], answer: Callable[[ErrorCode, str | None], _R]) -> _R | None:
    """``answer(code, message)`` when ``check()`` refuses the request (:class:`ApiError`), else ``None``:
    how a host asks a heartbeat's own checks before it looks for the group's coordinator."""
    try:
        check()
    except ApiError as error:
        return answer(error.code, error.message)
    return None


_G = TypeVar("_G", bound="_Group[Any]")


class _Group(Protocol[_M]):
    @property
    def group_id(self) -> str: ...

    @property
    def members(self) -> Mapping[str, _M]: ...


def unknown_member(member_id: str, group_id: str) -> ApiError:
    """UNKNOWN_MEMBER_ID as Kafka words it (``getOrMaybeCreateMember``, ``validateOffsetCommit``)."""
    return ApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")


def member_of(group: _Group[_M], member_id: str) -> _M:
    """The group's member ``member_id`` (:func:`unknown_member` raised if it has none)."""
    member = group.members.get(member_id)
    if member is None:
        raise unknown_member(member_id, group.group_id)
    return member


def timer_member(groups: Mapping[str, _G], group_id: str, member_id: str) -> tuple[_G, Any] | None:
    """The group and member a member's timer fired for, or ``None`` when either is gone already (a
    timer of a deleted group or a departed member does nothing)."""
    group = groups.get(group_id)
    if group is None:
        return None
    member = group.members.get(member_id)
    if member is None:
        return None
    return group, member
