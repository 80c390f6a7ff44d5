"""Differential: the error message FindCoordinator sends — sent raw to kgroup and to Apache Kafka 4.4.0
(the ``target`` fixture). Before v4 (one key) ``KafkaApis`` sends its error's ``Errors.message()``
("NONE" when there is none); from v4 (a batch of keys) it never sets one, so each entry carries the
field's default, "".
"""

from __future__ import annotations

import pytest
from tests.apache_kafka.conftest import Target
from tests.apache_kafka.test_diff_hostile import _coordinator
from tests.apache_kafka.wire import Raw

pytestmark = pytest.mark.apache_kafka

NONE = 0
COORDINATOR_NOT_AVAILABLE = 15


def test_find_coordinator_messages(target: Target, names: str) -> None:
    group = f"{names}-g"
    _coordinator(target.bootstrap_servers, group)
    with Raw(target.bootstrap_servers) as raw:
        v3 = raw.call("FindCoordinator", 3, {"key": group, "key_type": 0})
        v4 = raw.call("FindCoordinator", 4, {"key_type": 0, "coordinator_keys": [group, group]})
        v6 = raw.call(
            "FindCoordinator", 6, {"key_type": 1, "coordinator_keys": [""]}
        )  # no such transactional id
    assert (v3["error_code"], v3["error_message"]) == (NONE, "NONE")
    assert [(c["error_code"], c["error_message"]) for c in v4["coordinators"]] == [(NONE, ""), (NONE, "")]
    # the empty transactional id's answer is COORDINATOR_NOT_AVAILABLE until some test made
    # __transaction_state, NONE after (a broker shared by the run): either way no message
    ((code, message),) = [(c["error_code"], c["error_message"]) for c in v6["coordinators"]]
    assert code in (NONE, COORDINATOR_NOT_AVAILABLE) and message == ""
