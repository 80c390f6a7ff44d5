"""A topic's configs changed by IncrementalAlterConfigs, as Kafka 4.4.0's controller changes them
(``ConfigurationControlManager.incrementalAlterConfigResource``, then its validator).

Each operation in turn: SET takes the value, DELETE drops the override, APPEND and SUBTRACT only on a
list config (``cleanup.policy``, the throttled replicas; else INVALID_CONFIG "Can't APPEND to key …
because its type is not LIST.") add the values not there yet to, or take the values out of, the
current override — or the default when there is none. Then the whole set is checked
(``ControllerConfigurationValidator``: the topic's name, then :func:`kgroup.topic_configs.topic_config_error`)
and the topic must exist.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kgroup.broker.cluster import topic_name_error
from kgroup.model import ErrorCode
from kgroup.topic_configs import TOPIC_CONFIG_KEYS, topic_config_error

__all__ = ["TopicConfigRefused", "TopicOperation", "altered_topic_configs"]

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_OPERATION_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}
#: the list configs' defaults (``ConfigurationControlManager.getParts`` starts from them)
_LIST_DEFAULTS = {
    key.name: ("delete" if key.name == "cleanup.policy" else "")
    for key in TOPIC_CONFIG_KEYS
    if key.type == "LIST"
}


@dataclass(frozen=True, slots=True)
class TopicOperation:
    name: str
    operation: int
    value: str | None


class TopicConfigRefused(Exception):
    """The controller's refusal of a resource's changes: its error code and message."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _parts(value: str | None, name: str) -> list[str]:
    text = _LIST_DEFAULTS.get(name, "") if value is None else value
    return [part for part in text.split(",") if part]


def _java_split(text: str) -> list[str]:
    """``String.split(",")``: the parts, trailing empty ones dropped (``""`` is one empty part)."""
    if not text:
        return [""]
    parts = text.split(",")
    while parts and not parts[-1]:
        parts.pop()
    return parts


def altered_topic_configs(
    topic: str,
    current: Mapping[str, str],
    operations: Sequence[TopicOperation],
    exists: bool,
) -> dict[str, str]:
    """The topic's overrides after ``operations`` (:class:`TopicConfigRefused` for a refusal)."""
    configs: dict[str, str] = dict(current)
    for op in operations:
        if op.operation == SET:
            assert op.value is not None  # (a null value was refused before the controller)
            configs[op.name] = op.value
        elif op.operation == DELETE:
            configs.pop(op.name, None)
        elif op.operation in (APPEND, SUBTRACT):
            if op.name not in _LIST_DEFAULTS:
                what = _OPERATION_NAMES[op.operation]
                raise TopicConfigRefused(
                    ErrorCode.INVALID_CONFIG, f"Can't {what} to key {op.name} because its type is not LIST."
                )
            parts = _parts(configs.get(op.name), op.name)
            for value in _java_split(op.value or ""):
                if op.operation == APPEND:
                    if value not in parts:
                        parts.append(value)
                elif value in parts:
                    parts.remove(value)
            configs[op.name] = ",".join(parts)
        else:
            raise TopicConfigRefused(ErrorCode.INVALID_REQUEST, f"Unknown operation type {op.operation}")
    if not topic:
        raise TopicConfigRefused(ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed.")
    invalid_name = topic_name_error(topic)
    if invalid_name is not None:
        raise TopicConfigRefused(ErrorCode.INVALID_TOPIC_EXCEPTION, invalid_name)
    invalid = topic_config_error(list(configs.items()))
    if invalid is not None:
        raise TopicConfigRefused(ErrorCode.INVALID_CONFIG, invalid)
    if not exists:
        raise TopicConfigRefused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{topic}' does not exist.")
    return configs
