"""The transactional paths' ACLs, on kgroup serve and on Apache Kafka 4.4.0 with the same ACLs (issue 33
item 4): raw requests as ``alice`` (SASL/PLAIN) and ``bob`` (no ACL at all), the same answer from each.

alice may WRITE the transactional id ``x-txn`` (which implies DESCRIBE), only DESCRIBE ``x-txn-look``,
nothing on ``x-txn-denied``; WRITE the topic ``x-write``, nothing on ``x-none``; READ the group
``x-group``, nothing on ``x-group-denied``. Kafka's checks, in ``KafkaApis``' order: FindCoordinator
for a transactional id wants DESCRIBE; InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn and EndTxn
want WRITE on the id; an idempotent InitProducerId wants IDEMPOTENT_WRITE on the cluster or WRITE on
some topic; AddPartitionsToTxn wants WRITE on every topic (the others then OPERATION_NOT_ATTEMPTED);
AddOffsetsToTxn READ on the group; DescribeTransactions and ListTransactions show only the ids the
principal may DESCRIBE.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from tests.apache_kafka.test_diff_transactions import _describe
from tests.apache_kafka.wire import Raw
from tests.security.apache_sasl import SaslApacheKafka
from tests.security.conftest import USERS

from kgroup.testing import KafkaBroker

NONE = 0
TOPIC_AUTHORIZATION_FAILED = 29
GROUP_AUTHORIZATION_FAILED = 30
CLUSTER_AUTHORIZATION_FAILED = 31
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
OPERATION_NOT_ATTEMPTED = 55
TRANSACTIONAL_ID_NOT_FOUND = 105
_RETRIABLE = (14, 15, 16, 51)  # loading, not available, not coordinator, concurrent transactions
TXN, LOOK, DENIED = "x-txn", "x-txn-look", "x-txn-denied"


def _admin(bootstrap: str) -> AdminClient:
    return AdminClient(
        {
            "bootstrap.servers": bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "PLAIN",
            "sasl.username": "admin",
            "sasl.password": USERS["admin"],
        }
    )


def _allow(rtype: ResourceType, name: str, op: AclOperation) -> AclBinding:
    return AclBinding(
        rtype, name, ResourcePatternType.LITERAL, "User:alice", "*", op, AclPermissionType.ALLOW
    )


def _as(bootstrap: str, user: str) -> Raw:
    raw = Raw(bootstrap)
    raw.call("SaslHandshake", 1, {"mechanism": "PLAIN"})
    answer = raw.call("SaslAuthenticate", 2, {"auth_bytes": f"\0{user}\0{USERS[user]}".encode()})
    assert answer["error_code"] == NONE, answer
    return raw


def _until(call: Any, error_of: Any) -> Any:
    """``call()`` again while its answer's error is one a client retries (bounded)."""
    deadline = time.monotonic() + 30
    while True:
        answer = call()
        if error_of(answer) not in _RETRIABLE or time.monotonic() > deadline:
            return answer
        time.sleep(0.1)


def _find(raw: Raw, transactional_ids: list[str]) -> dict[str, int]:
    """FindCoordinator (key type 1) of each id: its error code, asked again while one is retriable."""
    found = _until(
        lambda: raw.call("FindCoordinator", 4, {"key_type": 1, "coordinator_keys": transactional_ids}),
        lambda a: next((c["error_code"] for c in a["coordinators"] if c["error_code"] in _RETRIABLE), NONE),
    )
    return {c["key"]: c["error_code"] for c in found["coordinators"]}


def _init(raw: Raw, transactional_id: str | None) -> dict[str, Any]:
    fields = {
        "transactional_id": transactional_id,
        "transaction_timeout": 60_000,
        "producer_id": -1,
        "producer_epoch": -1,
    }
    return dict(_until(lambda: raw.call("InitProducerId", 5, fields), lambda a: a["error_code"]))


def _add_partitions(raw: Raw, txn: str, pid: int, epoch: int) -> dict[str, int]:
    answer = raw.call(
        "AddPartitionsToTxn",
        3,
        {
            "v3_and_below_transactional_id": txn,
            "v3_and_below_producer_id": pid,
            "v3_and_below_producer_epoch": epoch,
            "v3_and_below_topics": [{"name": t, "partitions": [0]} for t in ("x-write", "x-none")],
        },
    )
    return {
        topic["name"]: p["partition_error_code"]
        for topic in answer["results_by_topic_v3_and_below"]
        for p in topic["results_by_partition"]
    }


def _add_offsets(raw: Raw, txn: str, pid: int, epoch: int, group: str) -> int:
    fields = {"transactional_id": txn, "producer_id": pid, "producer_epoch": epoch, "group_id": group}
    return int(
        _until(lambda: raw.call("AddOffsetsToTxn", 3, fields), lambda a: a["error_code"])["error_code"]
    )


def _end(raw: Raw, txn: str, pid: int, epoch: int) -> int:
    fields = {"transactional_id": txn, "producer_id": pid, "producer_epoch": epoch, "committed": False}
    return int(_until(lambda: raw.call("EndTxn", 3, fields), lambda a: a["error_code"])["error_code"])


def scenario(bootstrap: str) -> dict[str, Any]:
    """Topics and ACLs made as admin (and a transaction of admin's own, which alice may not see); then
    every transactional request as alice and bob; the answers."""
    admin = _admin(bootstrap)
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in ("x-write", "x-none")]).values():
        future.result(timeout=30)
    grants = [
        _allow(ResourceType.TRANSACTIONAL_ID, TXN, AclOperation.WRITE),
        _allow(ResourceType.TRANSACTIONAL_ID, LOOK, AclOperation.DESCRIBE),
        _allow(ResourceType.TOPIC, "x-write", AclOperation.WRITE),
        _allow(ResourceType.GROUP, "x-group", AclOperation.READ),
    ]
    for future in admin.create_acls(grants).values():
        future.result(timeout=30)
    time.sleep(1.0)  # Apache Kafka applies ACLs from its metadata log
    seen: dict[str, Any] = {}
    with _as(bootstrap, "admin") as raw:
        _find(raw, ["x-txn-admin"])  # the first one makes __transaction_state
        own = _init(raw, "x-txn-admin")
        assert own["error_code"] == NONE, own
        assert _add_offsets(raw, "x-txn-admin", own["producer_id"], own["producer_epoch"], "x-group") == NONE
    with _as(bootstrap, "alice") as raw:
        seen["find coordinator"] = _find(raw, [TXN, LOOK, DENIED])
        for txn in (TXN, LOOK, DENIED):
            seen[f"init {txn}"] = _init(raw, txn)["error_code"]
        seen["init idempotent (WRITE on a topic)"] = _init(raw, None)["error_code"]
        ok = _init(raw, TXN)
        pid, epoch = ok["producer_id"], ok["producer_epoch"]
        seen["add partitions"] = _add_partitions(raw, TXN, pid, epoch)
        seen["add partitions, denied id"] = _add_partitions(raw, DENIED, pid, epoch)
        seen["add offsets, denied group"] = _add_offsets(raw, TXN, pid, epoch, "x-group-denied")
        seen["add offsets, denied id"] = _add_offsets(raw, DENIED, pid, epoch, "x-group")
        seen["add offsets"] = _add_offsets(raw, TXN, pid, epoch, "x-group")
        for txn in (TXN, LOOK, DENIED, "x-txn-admin"):
            described = _describe(raw, txn)
            seen[f"describe {txn}"] = (described["error_code"], described.get("transaction_state"))
        listed = raw.call(
            "ListTransactions", 1, {"state_filters": [], "producer_id_filters": [], "duration_filter": -1}
        )
        seen["list"] = (
            listed["error_code"],
            sorted(
                t["transactional_id"]
                for t in listed["transaction_states"]
                if t["transactional_id"].startswith("x-")
            ),
        )
        seen["end, denied id"] = _end(raw, DENIED, pid, epoch)
        seen["end"] = _end(raw, TXN, pid, epoch)
    with _as(bootstrap, "bob") as raw:
        seen["bob: init idempotent (no ACL)"] = _init(raw, None)["error_code"]
    return seen


@pytest.mark.apache_kafka
def test_transactional_acls_match_apache_kafka(apache_sasl: SaslApacheKafka) -> None:
    with KafkaBroker(
        listeners=["SASL_PLAINTEXT://127.0.0.1:0"],
        sasl_users=USERS,
        authorizer=True,
        super_users=["User:admin"],
        auto_create_topics=False,
    ) as kgroup_broker:
        ours = scenario(kgroup_broker.bootstrap_servers)
    theirs = scenario(apache_sasl.sasl_bootstrap)
    assert ours == theirs
    # and the table holds denials, as Kafka gives them
    assert theirs["find coordinator"] == {
        TXN: NONE,
        LOOK: NONE,
        DENIED: TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    }
    assert theirs[f"init {TXN}"] == NONE
    assert theirs[f"init {LOOK}"] == theirs[f"init {DENIED}"] == TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert theirs["init idempotent (WRITE on a topic)"] == NONE
    assert theirs["bob: init idempotent (no ACL)"] == CLUSTER_AUTHORIZATION_FAILED
    assert theirs["add partitions"] == {
        "x-write": OPERATION_NOT_ATTEMPTED,
        "x-none": TOPIC_AUTHORIZATION_FAILED,
    }
    assert set(theirs["add partitions, denied id"].values()) == {TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    assert theirs["add offsets, denied group"] == GROUP_AUTHORIZATION_FAILED
    assert theirs["add offsets, denied id"] == TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert theirs["add offsets"] == NONE
    assert (
        theirs[f"describe {DENIED}"][0]
        == theirs["describe x-txn-admin"][0]
        == TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    )
    assert theirs[f"describe {LOOK}"][0] == TRANSACTIONAL_ID_NOT_FOUND
    assert theirs[f"describe {TXN}"] == (NONE, "Ongoing")
    assert theirs["list"] == (NONE, [TXN])
    assert theirs["end, denied id"] == TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert theirs["end"] == NONE
