"""Apache Kafka with a SASL_PLAINTEXT listener for the clients beside its PLAINTEXT one (the
inter-broker and tooling listener, whose ANONYMOUS principal is a super user): the security tests'
peer. PLAIN users come from the listener's JAAS config; SCRAM users are created through the PLAINTEXT
listener with AlterUserScramCredentials (:meth:`SaslApacheKafka.add_scram_users`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kgroup.testing.apache_kafka import ApacheKafka
from kgroup.testing.apache_kafka import cluster as apache_cluster

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


class SaslApacheKafka(ApacheKafka):
    def __init__(
        self,
        users: Mapping[str, str],
        *,
        mechanisms: tuple[str, ...] = ("PLAIN",),
        configs: Mapping[str, object] | None = None,
    ) -> None:
        jaas = "".join(f' user_{name}="{password}"' for name, password in users.items())
        settings: dict[str, object] = {
            "sasl.enabled.mechanisms": ",".join(mechanisms),
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
                f"org.apache.kafka.common.security.plain.PlainLoginModule required{jaas};"
            ),
        }
        for mechanism in mechanisms:
            if mechanism == "OAUTHBEARER":
                # the broker logs in too (an unsecured token of its own); clients' tokens are checked by
                # Kafka's default OAuthBearerUnsecuredValidatorCallbackHandler
                settings["listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config"] = (
                    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                    'unsecuredLoginStringClaim_sub="admin";'
                )
            if mechanism.startswith("SCRAM-"):
                settings[f"listener.name.sasl_plaintext.{mechanism.lower()}.sasl.jaas.config"] = (
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;"
                )
        settings.update(configs or {})
        super().__init__(configs=settings)
        self.users = dict(users)
        self.sasl_port = apache_cluster._free_port()

    def _write_config(self, node: Any) -> None:
        super()._write_config(node)
        text = node.properties.read_text()
        sasl = f"SASL_PLAINTEXT://127.0.0.1:{self.sasl_port}"
        text = (
            text.replace(
                f"listeners=PLAINTEXT://127.0.0.1:{node.port},",
                f"listeners=PLAINTEXT://127.0.0.1:{node.port},{sasl},",
            )
            .replace(
                f"advertised.listeners=PLAINTEXT://127.0.0.1:{node.port}\n",
                f"advertised.listeners=PLAINTEXT://127.0.0.1:{node.port},{sasl}\n",
            )
            .replace(
                "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT\n",
                "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT\n",
            )
        )
        assert sasl in text
        node.properties.write_text(text)

    @property
    def sasl_bootstrap(self) -> str:
        return f"127.0.0.1:{self.sasl_port}"

    def add_scram_users(self, mechanisms: tuple[str, ...]) -> None:
        """Each user's password as a SCRAM credential of each mechanism (4096 iterations)."""
        from confluent_kafka.admin import (
            AdminClient,
            ScramCredentialInfo,
            ScramMechanism,
            UserScramCredentialUpsertion,
        )

        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
        # Kafka alters a user's credentials at most once per request: one request per mechanism
        for mechanism in mechanisms:
            info = ScramCredentialInfo(getattr(ScramMechanism, mechanism.replace("-", "_")), 4096)
            upserts = [
                UserScramCredentialUpsertion(name, info, password.encode())
                for name, password in self.users.items()
            ]
            for future in admin.alter_user_scram_credentials(upserts).values():
                future.result(timeout=30)
