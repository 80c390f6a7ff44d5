"""Synthetic keyed events for the demo, generated inside Spark: skewed keys and some keyless records.

Every field of event ``i`` is a pure function of ``(seed, i)`` — a SplitMix64 hash of the id, not a
random stream — so the data is the same whatever the number of Spark tasks or Arrow batch sizes.

* ``customer_id`` — the key: ``customer-000001`` … ``customer-<customers>``, drawn from a Zipf law
  of exponent ``zipf_exponent`` (customer of rank ``r`` has weight ``1 / r**s``), so a few customers
  produce a large share of the events: the hot keys that make hot partitions;
* about ``keyless_share`` of the events have no key (``null``): the null-key strategy places them;
* ``event_type`` (one of a few names) and ``amount_cents`` make it look like real data.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from kgroup.model import KgroupError

__all__ = ["EVENT_TYPES", "EventSpec", "event_columns", "generate_events"]

EVENT_TYPES = ("order_created", "order_paid", "order_shipped", "order_cancelled")

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _splitmix64(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """SplitMix64's finaliser: a fast, well-mixed 64-bit hash (wrap-around arithmetic intended)."""
    with np.errstate(over="ignore"):
        z = x + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _unit(h: npt.NDArray[np.uint64]) -> npt.NDArray[np.float64]:
    """Uniform doubles in [0, 1) from the top 53 bits of a hash."""
    return (h >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


@dataclass(frozen=True, slots=True)
class EventSpec:
    """What to generate."""

    events: int = 1_000_000
    seed: int = 42
    customers: int = 100_000
    zipf_exponent: float = 1.1
    keyless_share: float = 0.1

    def __post_init__(self) -> None:
        if self.events < 1:
            raise KgroupError(f"events: {self.events}; generate at least 1 event")
        if self.customers < 1:
            raise KgroupError(f"customers: {self.customers}; there must be at least 1 customer")
        if not 0.0 <= self.keyless_share <= 1.0:
            raise KgroupError(f"keyless_share: {self.keyless_share}; give a share between 0 and 1")
        if self.zipf_exponent < 0:
            raise KgroupError(f"zipf_exponent: {self.zipf_exponent}; give 0 (uniform) or more")

    def customer_cdf(self) -> npt.NDArray[np.float64]:
        """Cumulative Zipf probabilities of customers ranked 1..customers."""
        ranks = np.arange(1, self.customers + 1, dtype=np.float64)
        weights = ranks ** (-self.zipf_exponent)
        cdf = np.cumsum(weights)
        cdf /= cdf[-1]
        return cdf

    def customer_share(self, rank: int) -> float:
        """The expected share of *keyed* events of the customer of ``rank`` (1 = hottest)."""
        ranks = np.arange(1, self.customers + 1, dtype=np.float64)
        weights = ranks ** (-self.zipf_exponent)
        return float(weights[rank - 1] / weights.sum())


def event_columns(
    spec: EventSpec, event_ids: npt.NDArray[np.int64], cdf: npt.NDArray[np.float64]
) -> dict[str, Any]:
    """The generated columns for the given ids, as numpy arrays (customer as a rank, 0 = no key)."""
    ids = event_ids.astype(np.uint64)
    salt = np.uint64(spec.seed & 0xFFFFFFFFFFFFFFFF)
    with np.errstate(over="ignore"):
        base = ids * np.uint64(4) + salt * _GOLDEN
    key_draw = _unit(_splitmix64(base))
    keyless_draw = _unit(_splitmix64(base + np.uint64(1)))
    detail = _splitmix64(base + np.uint64(2))
    rank = np.searchsorted(cdf, key_draw, side="right") + 1
    rank = np.minimum(rank, spec.customers)
    rank[keyless_draw < spec.keyless_share] = 0
    return {
        "customer_rank": rank.astype(np.int64),
        "event_type": (detail % np.uint64(len(EVENT_TYPES))).astype(np.int64),
        "amount_cents": ((detail >> np.uint64(8)) % np.uint64(100_000)).astype(np.int64) + 1,
    }


def generate_events(spark: Any, spec: EventSpec, slices: int | None = None) -> Any:
    """A DataFrame of ``spec.events`` events (``event_id``, ``customer_id``, ``event_type``,
    ``amount_cents``), generated in Spark tasks over Arrow batches. Lazy until an action runs."""
    width = len(str(spec.customers))
    frame_slices = slices or max(2, spark.sparkContext.defaultParallelism)

    def generate(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        from kgroup.spark.worker_gc import task_started

        task_started()

        cdf = spec.customer_cdf()
        # Index 0 is the null key; customer of rank r is at index r.
        names = pa.array(
            [None, *(f"customer-{r:0{width}d}" for r in range(1, spec.customers + 1))], pa.string()
        )
        types = pa.array(EVENT_TYPES, pa.string())
        for batch in batches:
            ids = batch.column(0).to_numpy()
            cols = event_columns(spec, ids, cdf)
            yield pa.RecordBatch.from_arrays(
                [
                    batch.column(0),
                    names.take(pa.array(cols["customer_rank"])),
                    types.take(pa.array(cols["event_type"])),
                    pa.array(cols["amount_cents"], pa.int64()),
                ],
                names=["event_id", "customer_id", "event_type", "amount_cents"],
            )

    ids = spark.range(0, spec.events, 1, frame_slices).withColumnRenamed("id", "event_id")
    return ids.mapInArrow(generate, "event_id long, customer_id string, event_type string, amount_cents long")
