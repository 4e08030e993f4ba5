"""Progress bars for EM loops: tqdm when installed, a silent stand-in otherwise."""
from __future__ import annotations

from typing import Any, Iterable


class _Silent:
    def __init__(self, iterable: Iterable, **_: Any) -> None:
        self._it = iterable

    def __iter__(self):
        return iter(self._it)

    def set_postfix(self, *_: Any, **__: Any) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(iterable: Iterable, desc: str = "", disable: bool = False, **kwargs: Any):
    """A tqdm bar over `iterable` (``disable=True`` or no tqdm: a silent wrapper)."""
    if disable:
        return _Silent(iterable)
    try:
        from tqdm.auto import tqdm
    except ImportError:  # tqdm is optional
        return _Silent(iterable)
    return tqdm(iterable, desc=desc, **kwargs)
