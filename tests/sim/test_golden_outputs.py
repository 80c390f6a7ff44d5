"""Speed work must not change results: every example's `--json` (and a few fault scenarios') is
pinned by its SHA-256. A change of behaviour (a fixed defect) regenerates the file on purpose:

    .venv/bin/python tests/sim/test_golden_outputs.py --update

and says in its commit message which result changed and why.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from kgroup.cli.bench_simulate import bench_scenario
from kgroup.sim import Scenario, load_scenario, simulate, with_overrides
from kgroup.sim.campaign import base_scenario, random_consumer_scenario, random_scenario
from kgroup.sim.scenario import parse_scenario

try:
    from .conftest import EXAMPLE_RUNS, run_example
except ImportError:  # run as the regeneration command (a script in tests/sim)
    from conftest import EXAMPLE_RUNS, run_example  # type: ignore[no-redef]

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parents[1] / "examples"
GOLDEN = HERE / "golden_outputs.json"
# the base distribution's draws (what random_scenario gave these seeds before the subscription-change
# family took a third of the seeds): loss, resets, cuts, static, scale, subscribe among them
CAMPAIGN_SEEDS = (9, 11, 41, 53, 56)
# the subscription-change family (issue 22): seed 11 is eager sticky with stale claims handed back
FAMILY_SEEDS = (11,)
CONSUMER_CAMPAIGN_SEEDS = (9, 41, 53)


def _scenarios() -> dict[str, Scenario]:
    out = {f"examples/{p.name}": load_scenario(p) for p in sorted(EXAMPLES.glob("*.yaml"))}
    out["bench 20x200 10min"] = bench_scenario(20, 200, 600_000)
    for seed in CAMPAIGN_SEEDS:
        out[f"campaign seed {seed}"] = parse_scenario(base_scenario(seed), name=f"campaign-{seed}")
    for seed in FAMILY_SEEDS:
        data = random_scenario(seed)
        out[f"campaign family seed {seed}"] = parse_scenario(data, name=f"campaign-{seed}")
    # the consumer protocol (KIP-848): the rolling restart under both server assignors, and fault seeds
    rolling = out["examples/rolling-restart.yaml"]
    for assignor in ("uniform", "range"):
        out[f"consumer {assignor}: examples/rolling-restart.yaml"] = with_overrides(
            rolling, protocol="consumer", assignors=[assignor]
        )
    for seed in CONSUMER_CAMPAIGN_SEEDS:
        data = random_consumer_scenario(seed)
        out[f"consumer campaign seed {seed}"] = parse_scenario(data, name=data["name"])
    return out


def _digest(scenario: Scenario) -> str:
    return hashlib.sha256(simulate(scenario).to_json().encode()).hexdigest()


def _example_digest(name: str) -> str:
    """An example's digest from the run the example tests read (``run_example``: one per worker)."""
    return hashlib.sha256(run_example(name).to_json().encode()).hexdigest()


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=EXAMPLE_RUNS) if n.startswith("examples/") else n for n in sorted(_scenarios())],
)
def test_json_output_is_byte_identical(name: str) -> None:
    expected = json.loads(GOLDEN.read_text())
    assert name in expected, f"{name} is not pinned; run this file with --update"
    if name.startswith("examples/"):
        # the example as the example tests run it: the same scenario, its run shared with them
        example = name.removeprefix("examples/")
        assert with_overrides(load_scenario(EXAMPLES / example)) == _scenarios()[name]
        assert _example_digest(example) == expected[name]
    else:
        assert _digest(_scenarios()[name]) == expected[name]


if __name__ == "__main__":  # pragma: no cover - the regeneration command
    if sys.argv[1:] != ["--update"]:
        raise SystemExit("usage: python tests/sim/test_golden_outputs.py --update")
    GOLDEN.write_text(json.dumps({n: _digest(s) for n, s in sorted(_scenarios().items())}, indent=2) + "\n")
    print(f"wrote {GOLDEN}")
