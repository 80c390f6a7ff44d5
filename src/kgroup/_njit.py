"""numba's ``njit`` decorator with a type that keeps the decorated kernel's own signature.

numba below 0.66 ships no type information (kgroup holds numba below 0.66, docs/dependencies.md), so
under ``mypy --strict`` every ``@numba.njit`` kernel would become an untyped function. Every kernel
module decorates through this one instead; the decorator and the dispatcher it returns are numba's,
unchanged (its cache keys on the kernel's own module and line, not on this file).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numba

Kernel = TypeVar("Kernel", bound=Callable[..., Any])


def njit(**options: Any) -> Callable[[Kernel], Kernel]:
    """``numba.njit(**options)``, typed: the decorated kernel keeps its Python signature for callers."""
    decorator: Callable[[Kernel], Kernel] = numba.njit(**options)
    return decorator
