"""Which Python a session's workers run, and whether it has kgroup (``register(spark)``'s check).

The ``kgroup`` data source and kgroup's Python UDFs run in Spark's Python workers, which start the
interpreter the SparkContext was given when it started (``PYSPARK_PYTHON``, else ``python3`` on the
PATH; PySpark keeps it as ``SparkContext.pythonExec`` and hands it to each function it registers). A
user's own local session started without ``PYSPARK_PYTHON`` runs the system's ``python3``, which
has no kgroup: the first read then failed deep in a Spark traceback with ``No module named
'kgroup'``.

For a local master the workers run on this machine, so :func:`arrange_worker_python` asks that
interpreter itself (a short subprocess) and, when it has no kgroup, points the session's Python
workers at the driver's interpreter (which has it) and says so in one line. A cluster's executors
are other machines: docs/spark.md says what they need.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from functools import lru_cache
from typing import Any

__all__ = ["arrange_worker_python", "has_kgroup"]

LOG = logging.getLogger("kgroup.spark")
_PROBE = "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('kgroup') else 3)"
_PROBE_TIMEOUT_S = 30


@lru_cache(maxsize=16)
def has_kgroup(python: str) -> bool:
    """Whether the interpreter ``python`` (a path or a name on the PATH) can import kgroup."""
    if python == sys.executable:
        return True
    try:
        done = subprocess.run(
            [python, "-c", _PROBE], capture_output=True, timeout=_PROBE_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def arrange_worker_python(spark: Any) -> str | None:
    """On a local session whose Python workers' interpreter has no kgroup: run them on the driver's
    interpreter instead (for the functions registered from now on) and return the line said (also
    logged as a warning); ``None`` when there was nothing to arrange (or the master is a cluster's)."""
    context = spark.sparkContext
    master = str(context.master)
    python = str(getattr(context, "pythonExec", "") or "python3")
    if not master.startswith("local") or has_kgroup(python):
        return None
    context.pythonExec = sys.executable
    line = (
        f"kgroup: this local SparkSession's Python workers ran {python!r}, which has no kgroup; "
        f"register() runs them on {sys.executable} (the driver's Python) instead. To choose, start the "
        "session with PYSPARK_PYTHON set to a Python that has kgroup (docs/spark.md)"
    )
    LOG.warning("%s", line)
    return line
