"""``kgroup demo``: the main job, as a sequence of stages whose results make one report.

Stages today: ``events`` (skewed synthetic events generated in Spark), ``partitioning`` (every
event's Kafka partition for two partition counts, skew, hot keys, what moves), ``pipeline`` (the
events produced to kgroup's embedded broker through the Spark sink and read back with Structured
Streaming, checked exactly once) and ``rebalance`` (the simulator's strategy sweep on Spark). To add
one, write a class with ``name``, ``title`` and ``run(context)`` returning a
:class:`~kgroup.demo.stages.StageResult`, and add it to
:func:`default_stages`. See ``docs/demo.md``.
"""

from __future__ import annotations

# the package's API: the stages module's (its ``__all__``, listed there only) and default_stages
from kgroup.demo import stages
from kgroup.demo.stages import *  # noqa: F403
from kgroup.demo.stages import DemoConfig, Stage  # named by default_stages

__all__ = ["default_stages"]
__all__ += stages.__all__


def default_stages(config: DemoConfig) -> list[Stage]:
    """The stages ``kgroup demo`` runs, in order."""
    from kgroup.demo.partitioning import EventsStage, PartitioningStage

    stages: list[Stage] = [EventsStage(), PartitioningStage()]
    if config.pipeline:
        from kgroup.demo.pipeline import PipelineStage

        stages.append(PipelineStage())
    if config.rebalance_seeds > 0:
        from kgroup.demo.rebalance import RebalanceStage

        stages.append(RebalanceStage(seeds=config.rebalance_seeds))
    return stages
