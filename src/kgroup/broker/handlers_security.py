"""SaslHandshake and SaslAuthenticate once a connection is past authentication (or on a listener
without SASL): Kafka's ``KafkaApis`` answers both ILLEGAL_SASL_STATE. Before authentication they
never reach here — :mod:`kgroup.security.session` answers them."""

from __future__ import annotations

from typing import Any

from kgroup.broker.dispatch import RequestContext, register
from kgroup.wire.api_keys import ApiKey

ILLEGAL_SASL_STATE = 34


@register(ApiKey.SASL_HANDSHAKE, versions=(0, 1))
async def sasl_handshake(ctx: RequestContext, request: Any) -> dict[str, Any]:
    return {"error_code": ILLEGAL_SASL_STATE, "mechanisms": []}


@register(ApiKey.SASL_AUTHENTICATE, versions=(0, 2))
async def sasl_authenticate(ctx: RequestContext, request: Any) -> dict[str, Any]:
    return {
        "error_code": ILLEGAL_SASL_STATE,
        "error_message": "SaslAuthenticate request received after successful authentication",
        "auth_bytes": b"",
        "session_lifetime": 0,
    }
