"""What a broker holds for security: listeners' TLS context, the credential store, the authorizer,
and a new :class:`~kgroup.security.session.Session` per connection.

The broker calls :meth:`SecurityRuntime.session` when a connection opens and
:meth:`SecurityRuntime.authorize` from the handlers; nothing else of the broker knows about
security.
"""

from __future__ import annotations

import ssl
from typing import Any

from kgroup.security.acl import AclBinding, AclOperation, Authorizer, ResourceType
from kgroup.security.credentials import CredentialStore
from kgroup.security.durable import read_json, write_json
from kgroup.security.listeners import Listener, SecurityConfig, server_ssl_context
from kgroup.security.principal import principal_from_certificate
from kgroup.security.session import BrokerHooks, Session

__all__ = ["ACL_FILE", "SecurityRuntime"]

ACL_FILE = "acls.json"


class SecurityRuntime:
    def __init__(
        self,
        config: SecurityConfig,
        hooks: BrokerHooks,
    ) -> None:
        self.config = config
        #: what each connection's session asks of the broker
        self._hooks = hooks
        self.credentials = CredentialStore(config.state_dir)
        self.credentials.add_users(config.users)
        stored = read_json(config.state_dir / ACL_FILE) if config.state_dir is not None else None
        self.authorizer = Authorizer(
            (AclBinding.from_json(entry) for entry in stored or []),
            config.super_users,
            config.allow_everyone_if_no_acl_found,
        )
        self._ssl: ssl.SSLContext | None = None

    @property
    def enforcing(self) -> bool:
        """Whether ACLs are checked (an authorizer is configured)."""
        return self.config.authorizer

    def ssl_context(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = server_ssl_context(self.config.tls)
        return self._ssl

    def session(self, listener: Listener | None, ssl_object: Any) -> Session:
        protocol = "PLAINTEXT" if listener is None else listener.protocol
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        return Session(
            protocol,
            listener="" if listener is None else listener.name,
            mechanisms=self.config.sasl_mechanisms,
            credentials=self.credentials,
            tls_principal=principal_from_certificate(der),
            max_reauth_ms=self.config.connections_max_reauth_ms,
            failed_delay_ms=self.config.failed_authentication_delay_ms,
            hooks=self._hooks,
        )

    def authorize(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType, name: str
    ) -> bool:
        if not self.config.authorizer:
            return True
        return self.authorizer.authorize(principal, host.lstrip("/"), operation, resource_type, name)

    def authorize_by_resource_type(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        if not self.config.authorizer:
            return True
        return self.authorizer.authorize_by_resource_type(
            principal, host.lstrip("/"), operation, resource_type
        )

    def save_acls(self) -> None:
        if self.config.state_dir is not None:
            write_json(self.config.state_dir / ACL_FILE, [acl.to_json() for acl in self.authorizer.acls()])
