"""Summary tables that print whole.

pandas shortens a printed frame to the terminal (``...`` for the middle columns and rows), so
``print(lf_quality(...))`` would hide the very columns it exists to show. A
:class:`SummaryTable` is an ordinary ``DataFrame`` whose printed form has every row and
column; anything derived from it (a slice, ``round``) stays one.
"""
from __future__ import annotations

import pandas as pd

__all__ = ["SummaryTable", "WHOLE"]

#: pandas display options under which a frame prints whole (for ``pd.option_context``).
WHOLE = ("display.max_rows", None, "display.max_columns", None, "display.width", 10_000,
         "display.max_colwidth", None)


class SummaryTable(pd.DataFrame):
    """A ``DataFrame`` that prints every row and column (a per-function or per-annotator
    summary, tens of rows)."""

    @property
    def _constructor(self):
        return SummaryTable

    def __repr__(self) -> str:
        with pd.option_context(*WHOLE):
            return super().__repr__()

    def _repr_html_(self) -> str:
        with pd.option_context(*WHOLE):
            return super()._repr_html_()
