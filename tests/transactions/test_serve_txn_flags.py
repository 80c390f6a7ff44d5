"""`kgroup serve`'s flags for the transaction coordinator (Kafka's ``TransactionStateManagerConfig``):
Kafka's defaults, its bounds (an INT of at least 1) as one-line errors, and a flag that takes effect."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.broker.procs import BrokerProcess
from tests.test_cli_bad_input import one_line_error

from kgroup.broker.config import BrokerConfig
from kgroup.model import KgroupError
from kgroup.transactions.coordinator import TxnCoordinatorConfig

FLAGS = {
    "--transaction-max-timeout-ms": "transaction.max.timeout.ms",
    "--transactional-id-expiration-ms": "transactional.id.expiration.ms",
    "--transaction-abort-timed-out-transaction-cleanup-interval-ms": (
        "transaction.abort.timed.out.transaction.cleanup.interval.ms"
    ),
    "--transaction-remove-expired-transaction-cleanup-interval-ms": (
        "transaction.remove.expired.transaction.cleanup.interval.ms"
    ),
}


def test_the_defaults_are_kafkas() -> None:
    assert BrokerConfig().txn_coordinator_config() == TxnCoordinatorConfig(
        transaction_max_timeout_ms=900_000,
        transactional_id_expiration_ms=604_800_000,
        abort_timed_out_interval_ms=10_000,
        remove_expired_interval_ms=3_600_000,
    )


def test_the_settings_reach_the_coordinator() -> None:
    config = BrokerConfig(
        transaction_max_timeout_ms=5000,
        transactional_id_expiration_ms=60_000,
        transaction_abort_timed_out_interval_ms=200,
        transaction_remove_expired_interval_ms=1000,
        offsets_topic_partitions=7,
    ).txn_coordinator_config()
    assert (
        config.transaction_max_timeout_ms,
        config.transactional_id_expiration_ms,
        config.abort_timed_out_interval_ms,
        config.remove_expired_interval_ms,
        config.offsets_topic_partitions,
    ) == (5000, 60_000, 200, 1000, 7)


@pytest.mark.parametrize("flag", sorted(FLAGS))
@pytest.mark.parametrize("value", ["0", "-5", str(2**31)])
def test_a_value_out_of_kafkas_bounds_is_a_one_line_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, flag: str, value: str
) -> None:
    message = one_line_error(capsys, "serve", "--port", "0", "--data-dir", str(tmp_path), flag, value)
    assert message == f"{FLAGS[flag]}: {value}; give 1-2147483647 (ms), Kafka's bounds", message
    assert not list(tmp_path.iterdir())  # refused before anything started


def test_the_largest_values_are_taken() -> None:
    BrokerConfig(transaction_max_timeout_ms=2**31 - 1, transactional_id_expiration_ms=2**31 - 1)
    with pytest.raises(KgroupError, match=r"^transaction\.max\.timeout\.ms: 2147483648;"):
        BrokerConfig(transaction_max_timeout_ms=2**31)


def test_transaction_max_timeout_refuses_a_longer_transaction_timeout(tmp_path: Path) -> None:
    """With ``--transaction-max-timeout-ms 5000`` a producer asking for 10 s is refused
    (InitProducerId: INVALID_TRANSACTION_TIMEOUT) and one asking for 5 s initialises."""
    from confluent_kafka import KafkaError, KafkaException, Producer

    broker = BrokerProcess(tmp_path, "--transaction-max-timeout-ms", "5000")
    try:
        too_long = Producer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "transactional.id": "long",
                "transaction.timeout.ms": 10_000,
                "log_level": 0,
            }
        )
        with pytest.raises(KafkaException) as refused:
            too_long.init_transactions(30)
        assert refused.value.args[0].code() == KafkaError.INVALID_TRANSACTION_TIMEOUT, refused.value
        fits = Producer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "transactional.id": "fits",
                "transaction.timeout.ms": 5000,
                "log_level": 0,
            }
        )
        fits.init_transactions(30)
        fits.begin_transaction()
        fits.commit_transaction(30)
    finally:
        broker.proc.kill()
        broker.proc.wait(timeout=30)
        if broker.proc.stdout is not None:
            broker.proc.stdout.close()
