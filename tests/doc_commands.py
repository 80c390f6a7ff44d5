"""The shell examples of README.md and docs/*.md as commands (for ``test_doc_examples.py``).

A block (```bash, ```sh, ```console) becomes its commands as a reader types them: a console block's
``$ `` lines (the others are output), a bash block's lines, ``\\`` continuations joined, a here-document
kept with its command, comments dropped, a trailing ``&`` meaning "in the background".
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).parents[1]
PAGES = sorted([*ROOT.glob("docs/*.md"), ROOT / "README.md"])
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)
SHELL = ("bash", "sh", "console")
_HEREDOC = re.compile(r"<<-?\s*'?(\w+)'?")


@dataclass(frozen=True, slots=True)
class Command:
    text: str  # as written, comments dropped (a here-document: the whole text)
    argv: tuple[str, ...]
    raw: str = ""  # the line as written (for the shell)
    background: bool = False
    heredoc: bool = False

    @property
    def is_kgroup(self) -> bool:
        return bool(self.argv) and self.argv[0] == "kgroup"


@dataclass(frozen=True, slots=True)
class ShellBlock:
    name: str  # page#index
    commands: tuple[Command, ...]


def _logical_lines(language: str, text: str) -> list[str]:
    lines: list[str] = []
    pending = ""
    heredoc_end: str | None = None
    for raw in text.splitlines():
        if heredoc_end is not None:
            pending += "\n" + raw
            if raw.strip() == heredoc_end:
                lines.append(pending)
                pending, heredoc_end = "", None
            continue
        line = raw
        if not pending:
            if language == "console":
                if not line.startswith("$ "):
                    continue  # output
                line = line[2:]
            if not line.strip() or line.lstrip().startswith("#"):
                continue
        pending = (pending + " " + line.strip()) if pending else line.strip()
        found = _HEREDOC.search(line)
        if found is not None:
            heredoc_end = found.group(1)
            continue
        if pending.endswith("\\"):
            pending = pending[:-1].rstrip()
            continue
        lines.append(pending)
        pending = ""
    if pending:
        lines.append(pending)
    return lines


def parse(language: str, text: str) -> tuple[Command, ...]:
    out: list[Command] = []
    for line in _logical_lines(language, text):
        if "\n" in line:  # a here-document: run by the shell as written
            first = tuple(shlex.split(line.splitlines()[0], comments=True))
            out.append(Command(line, first, raw=line, heredoc=True))
            continue
        argv = shlex.split(line, comments=True)
        background = bool(argv) and argv[-1] == "&"
        if background:
            argv = argv[:-1]
        text = shlex.join(argv)
        out.append(Command(text, tuple(argv), raw=line, background=background))
    return tuple(out)


def shell_blocks() -> list[ShellBlock]:
    found: list[ShellBlock] = []
    for page in PAGES:
        for n, match in enumerate(BLOCK.finditer(page.read_text(encoding="utf-8"))):
            if match.group(1) in SHELL:
                name = f"{page.relative_to(ROOT)}#{n}"
                found.append(ShellBlock(name, parse(match.group(1), match.group(2))))
    return found


def python_blocks() -> dict[str, str]:
    found: dict[str, str] = {}
    for page in PAGES:
        for n, match in enumerate(BLOCK.finditer(page.read_text(encoding="utf-8"))):
            if match.group(1) == "python":
                found[f"{page.relative_to(ROOT)}#{n}"] = match.group(2)
    return found
