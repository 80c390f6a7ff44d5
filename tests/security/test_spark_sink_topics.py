"""Issue 31: where the ``kgroup`` sink's topic truly cannot be written, one line before any Spark
job: Apache Kafka 4.4.0 with ``auto.create.topics.enable=false`` (the security tests' broker; its
PLAINTEXT listener's principal is a super user), and a principal without rights on kgroup serve with
an authorizer (SASL: the sink's librdkafka path)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest
from tests.security.apache_sasl import SaslApacheKafka
from tests.security.conftest import USERS

from kgroup.testing import KafkaBroker

pytestmark = pytest.mark.spark

JOBS = "kgroup-sink-topics"


@pytest.fixture(scope="module")
def kgroup_spark(spark: Any) -> Any:
    from kgroup.spark import register

    register(spark)
    return spark


def fails_before_a_job(spark: Any, action: Callable[[], Any]) -> str:
    context = spark.sparkContext
    context.setJobGroup(JOBS, "topic cannot be written")
    try:
        with pytest.raises(Exception) as caught:
            action()
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
    assert list(context.statusTracker().getJobIdsForGroup(JOBS)) == []
    return str(caught.value)


def write(spark: Any, bootstrap: str, topic: str, **options: str) -> None:
    writer = (
        spark.range(3)
        .selectExpr("cast(id as string) as key", "cast(id as string) as value")
        .write.format("kgroup")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
    )
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.mode("append").save()


@pytest.mark.apache_kafka
def test_apache_kafka_that_does_not_create_topics(kgroup_spark: Any, apache_sasl: SaslApacheKafka) -> None:
    bootstrap = apache_sasl.bootstrap_servers
    topic = f"never-created-{os.getpid()}"
    text = fails_before_a_job(kgroup_spark, lambda: write(kgroup_spark, bootstrap, topic))
    assert (
        f"topic: '{topic}' does not exist on the cluster at {bootstrap}, which does not create topics on "
        "first use (auto.create.topics.enable=false); create it first"
    ) in text


def test_a_principal_that_may_not_write_the_topic(kgroup_spark: Any) -> None:
    with KafkaBroker(
        topics={"orders": 1},
        listeners=["SASL_PLAINTEXT://127.0.0.1:0"],
        sasl_users=USERS,
        authorizer=True,
        super_users=["User:admin"],
    ) as kafka:
        sasl = {
            "kafka.security.protocol": "SASL_PLAINTEXT",
            "kafka.sasl.mechanism": "PLAIN",
            "kafka.sasl.username": "bob",
            "kafka.sasl.password": USERS["bob"],
        }
        bootstrap = kafka.listener_bootstrap_servers("SASL_PLAINTEXT")
        for topic in ("orders", "not-there-yet"):
            text = fails_before_a_job(kgroup_spark, lambda: write(kgroup_spark, bootstrap, topic, **sasl))  # noqa: B023
            assert (
                f"topic: the principal may not write to '{topic}' (TOPIC_AUTHORIZATION_FAILED); grant it "
                "Write on the topic (and Create, for a topic the broker creates on first use)"
            ) in text
