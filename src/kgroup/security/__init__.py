"""Kafka's security for ``kgroup serve``: SASL (PLAIN, SCRAM-SHA-256/512), TLS listeners and ACLs.

The pure parts (no sockets, no broker state) live here: the SASL servers (:mod:`.scram`,
:mod:`.plain`), the credential store (:mod:`.credentials`), the ACL model and authorizer
(:mod:`.acl`), principals (:mod:`.principal`), a test CA (:mod:`.testca`), listener settings
(:mod:`.listeners`) and a connection's authentication state machine (:mod:`.session`). The broker
hooks into them in two places only: a connection's session, and an authorize call per request.
"""
