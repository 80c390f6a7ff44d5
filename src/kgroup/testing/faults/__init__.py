"""Real network faults for real clients: toxiproxy in front of ``kgroup serve`` or Apache Kafka.

* :mod:`.toxiproxy` — the pinned toxiproxy server (built with ``go install``) and its HTTP API;
* :mod:`.run` — :class:`FaultBed` (a broker with one proxy per consumer, advertised through
  ``advertised.listeners``) and :func:`run_fault` (confluent-kafka consumers and a producer through
  a fault, recording what they saw);
* :mod:`.invariants` — the checks on what the clients saw (pure);
* :mod:`.simulated` — the simulator's run of the same scenario with the same fault.

``python -m kgroup.testing.faults fetch`` builds toxiproxy (``make faults-tools``); docs/faults.md.
"""

from kgroup.testing.faults.invariants import Observations, Report, check
from kgroup.testing.faults.run import FAULT_KINDS, Fault, FaultBed, FaultRun, RunOutcome, run_fault
from kgroup.testing.faults.toxiproxy import (
    Proxy,
    Toxiproxy,
    ToxiproxyUnavailable,
    install_toxiproxy,
    require_toxiproxy,
    toxiproxy_binary,
)

__all__ = [
    "FAULT_KINDS",
    "Fault",
    "FaultBed",
    "FaultRun",
    "Observations",
    "Proxy",
    "Report",
    "RunOutcome",
    "Toxiproxy",
    "ToxiproxyUnavailable",
    "check",
    "install_toxiproxy",
    "require_toxiproxy",
    "run_fault",
    "toxiproxy_binary",
]
