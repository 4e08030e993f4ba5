"""The code blocks of the README and the tutorials, as the docs tests run them.

A ```python block runs as written, in its own process, unless the line before it is an HTML
comment ``<!-- no-run: REASON -->`` (a block that needs a live Label Studio server or a long
training); the reason is shown in the skipped test's message.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import List, NamedTuple, Optional

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
TUTORIALS = ROOT / "docs" / "tutorials"
_BLOCK = re.compile(r"^```python\n(.*?)^```", flags=re.S | re.M)
_NO_RUN = re.compile(r"<!--\s*no-run:\s*(.*?)\s*-->\s*$", flags=re.S)


class Block(NamedTuple):
    path: Path
    line: int
    code: str
    no_run: Optional[str]  # the reason given, or None when the block runs

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> List[Block]:
    text = path.read_text(encoding="utf-8")
    found = []
    for match in _BLOCK.finditer(text):
        before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = _NO_RUN.search(before)
        found.append(Block(path, text.count("\n", 0, match.start()) + 1, match.group(1),
                           marker.group(1) if marker else None))
    return found


def documented_files() -> List[Path]:
    return [README] + sorted(TUTORIALS.glob("*.md"))


def all_blocks() -> List[Block]:
    return [block for path in documented_files() for block in blocks(path)]
