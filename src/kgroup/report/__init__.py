"""Self-contained HTML reports (one folder, images inlined) and the charts that go in them.

Used by ``kgroup demo`` (partitioning) and the simulator (timelines). See ``docs/demo.md``.
"""

# the package is its page builder's names, listed once (in html.py)
from kgroup.report.html import *  # noqa: F403
from kgroup.report.html import __all__ as __all__
