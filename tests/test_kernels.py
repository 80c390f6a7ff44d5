"""``python -m kgroup.kernels`` compiles every numba kernel kgroup has, so a fresh install's first
Spark tasks, test workers or broker requests do not each compile them."""

from __future__ import annotations

import importlib
import json
import pathlib
import subprocess
import sys

import numba
from numba.core.registry import CPUDispatcher

from kgroup import kernels

ROOT = pathlib.Path(__file__).parents[1]

#: every module of kgroup that holds numba kernels
KERNEL_MODULES = (
    "kgroup.partitioning._murmur2_kernels",
    "kgroup.assignors.fast.assignment_bytes",
    "kgroup.assignors.fast.constrained_kernel",
    "kgroup.assignors.fast.general_kernel",
    "kgroup.assignors.fast.userdata_kernel",
    "kgroup.log._records_kernel",
    "kgroup.spark.source._record_kernels",
    "kgroup.spark.source._batch_kernels",
    "kgroup.group.assignors.fast.javamaps",
    "kgroup.group.assignors.fast.range_fast",
    "kgroup.group.assignors.fast.reuse",
    "kgroup.group.assignors.fast.simple_fast",
    "kgroup.group.assignors.fast.uniform_fast",
    "kgroup.group.assignors.fast.uniform_heterogeneous_fast",
)


#: the kernels kgroup calls from Python (the others are helpers compiled into these)
ENTRY_KERNELS = frozenset(
    {
        "kgroup.partitioning._murmur2_kernels.hash_kernel",
        "kgroup.partitioning._murmur2_kernels.hash_kernel_parallel",
        "kgroup.partitioning._murmur2_kernels.partition_kernel",
        "kgroup.partitioning._murmur2_kernels.partition_kernel_parallel",
        "kgroup.assignors.fast.assignment_bytes._encode_kernel",
        "kgroup.assignors.fast.constrained_kernel.constrained_kernel",
        "kgroup.assignors.fast.general_kernel.general_kernel",
        "kgroup.assignors.fast.userdata_kernel.decode_kernel",
        "kgroup.assignors.fast.userdata_kernel.fnv1a",
        "kgroup.log._records_kernel.walk_kernel",
        "kgroup.spark.source._record_kernels.records_kernel",
        "kgroup.spark.source._record_kernels.gather_kernel",
        "kgroup.spark.source._record_kernels.headers_kernel",
        "kgroup.spark.source._batch_kernels.encode_kernel",
        "kgroup.group.assignors.fast.javamaps.put_order",
        "kgroup.group.assignors.fast.javamaps.replay",
        "kgroup.group.assignors.fast.range_fast.range_kernel",
        "kgroup.group.assignors.fast.reuse.aligned_rows",
        "kgroup.group.assignors.fast.reuse.gather_entries",
        "kgroup.group.assignors.fast.reuse.seen_rows",
        "kgroup.group.assignors.fast.simple_fast.simple_homogeneous_kernel",
        "kgroup.group.assignors.fast.uniform_fast.homogeneous_kernel",
        "kgroup.group.assignors.fast.uniform_fast.mark_flagged",
        "kgroup.group.assignors.fast.uniform_fast.ops_by_member",
        "kgroup.group.assignors.fast.uniform_heterogeneous_fast.heterogeneous_kernel",
    }
)


def _dispatchers() -> dict[str, CPUDispatcher]:
    found = {}
    for name in KERNEL_MODULES:
        module = importlib.import_module(name)
        for attribute, value in vars(module).items():
            if isinstance(value, CPUDispatcher) and value.__module__ == name:
                found[f"{name}.{attribute}"] = value
    return found


def test_every_kernel_module_is_listed() -> None:
    """A new kernel module must be added above (and to kgroup.kernels): look for njit users."""
    import kgroup

    root = pathlib.Path(kgroup.__file__).parent
    users = {
        "kgroup." + ".".join(path.relative_to(root).with_suffix("").parts)
        for path in root.rglob("*.py")
        if "@njit(" in path.read_text() or "@numba.njit(" in path.read_text()
    }
    assert users == set(KERNEL_MODULES)


def test_compile_all_compiles_every_kernel() -> None:
    """In a fresh process (so no other test's calls count): after compile_all, every kernel kgroup
    calls from Python has its machine code."""
    script = (
        "import json\n"
        "from kgroup import kernels\n"
        "from tests.test_kernels import _dispatchers\n"
        "groups = [name for name, _ in kernels.compile_all()]\n"
        "ready = sorted(name for name, d in _dispatchers().items() if d.signatures)\n"
        "print(json.dumps({'groups': groups, 'ready': ready}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=600, check=False, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["groups"] == [name for name, _ in kernels.KERNEL_GROUPS]
    threaded = numba.get_num_threads() > 1  # the parallel kernels run only with two threads or more
    expected = {name for name in ENTRY_KERNELS if threaded or "parallel" not in name}
    assert expected - set(result["ready"]) == set()


def test_the_command_says_what_it_compiled() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kgroup.kernels"], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert [line.split(" ready in ")[0] for line in lines] == [
        *(f"kgroup kernels: {name}" for name, _ in kernels.KERNEL_GROUPS),
        "kgroup kernels: all",
    ]


def test_the_groups_compile_in_processes_side_by_side() -> None:
    """``--jobs 2``: every group once, in the order they finished; a bad count is one line, exit 2."""
    done = subprocess.run(
        [sys.executable, "-m", "kgroup.kernels", "--jobs", "2"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert sorted(line.split(" ready in ")[0] for line in lines[:-1]) == sorted(
        f"kgroup kernels: {name}" for name, _ in kernels.KERNEL_GROUPS
    )
    assert lines[-1].startswith("kgroup kernels: all ready in ")
    for bad in (["--jobs", "0"], ["--jobs"], ["--jobs", "two"], ["--fast"]):
        command = [sys.executable, "-m", "kgroup.kernels", *bad]
        refused = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
        assert refused.returncode == 2, bad
        assert refused.stderr.count("\n") == 1 and "--jobs: give a count of 1 or more" in refused.stderr, bad
