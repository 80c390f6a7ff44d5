"""Kafka's bytes: the consumer protocol's Subscription/Assignment codec and the wire framing.

``wire`` sits beside the pure core: it knows Kafka's byte layouts (through ``kio``, generated from
Kafka's own JSON message schemas), not the protocol's decisions.
"""
