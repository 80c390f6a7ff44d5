"""The share group kind (KIP-932, "queues for Kafka") as Kafka 4.4.0's group coordinator runs it.

``kind.py`` (``ShareGroups``: what the kind declares to the router), ``group.py`` (one group and its
members, replayed from the ``ShareGroup*`` records), ``heartbeat.py`` (ShareGroupHeartbeat: join,
heartbeat, leave, the session timeout's fencing, the target assignment with the ``simple``
assignor), ``requests.py`` (ShareGroupDescribe, ListGroups' entry, DeleteGroups, the share-state
initialisation task), ``timers.py``.
"""
