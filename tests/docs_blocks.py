"""The code blocks of the README and the documentation pages, as the docs tests run them.

The pages tested are ``README.md``, ``docs/*.md``, ``docs/guides/*.md`` and
``docs/tutorials/*.md`` (``documented_files``). A ```python block runs as written, in its own
process from the repository root, and prints what it shows. The line before a block may be
one HTML comment:

- ``<!-- no-run: REASON -->``: the block is not run (it needs a live Label Studio server or
  trains for minutes); the reason is shown in the skipped test's message.
- ``<!-- continues -->``: the block goes on from an earlier block of the same page (it uses
  that block's names): it runs joined after the code of the page's previous block that runs
  (a no-run block in between is passed over), and so after everything that one continues. A
  block that a later block continues is tested as part of that block's run, not on its own
  (``blocks_to_run``): the same code would otherwise run twice.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import List, NamedTuple, Optional

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
_BLOCK = re.compile(r"^```python\n(.*?)^```", flags=re.S | re.M)
_NO_RUN = re.compile(r"<!--\s*no-run:\s*(.*?)\s*-->\s*$", flags=re.S)
_CONTINUES = re.compile(r"<!--\s*continues\s*-->\s*$")


class Block(NamedTuple):
    path: Path
    line: int
    code: str  # what runs: the block's own code, after the blocks it continues
    no_run: Optional[str]  # the reason given, or None when the block runs
    continues: Optional[int] = None  # the line of the block it goes on from

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> List[Block]:
    text = path.read_text(encoding="utf-8")
    found: List[Block] = []
    for match in _BLOCK.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = _NO_RUN.search(before)
        code, no_run = match.group(1), marker.group(1) if marker else None
        continues = None
        if _CONTINUES.search(before):
            runs = [block for block in found if block.no_run is None]
            if not runs:
                raise ValueError(f"{path}:{line}: <!-- continues --> before any block of the "
                                 "page that runs")
            code, continues = runs[-1].code + "\n" + code, runs[-1].line
        found.append(Block(path, line, code, no_run, continues))
    return found


def documented_files() -> List[Path]:
    return [README] + [path for folder in (DOCS, DOCS / "guides", DOCS / "tutorials")
                       for path in sorted(folder.glob("*.md"))]


def all_blocks() -> List[Block]:
    return [block for path in documented_files() for block in blocks(path)]


def blocks_to_run(found: List[Block]) -> List[Block]:
    """The blocks that get a run of their own: all but those a later block continues."""
    continued = {(block.path, block.continues) for block in found if block.continues}
    return [block for block in found if (block.path, block.line) not in continued]
