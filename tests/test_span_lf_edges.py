"""Edge cases of span labeling functions, their summary and the abstain-aware model, as a
Snorkel / skweak user meets them (one test per defect found; fast, numpy only)."""
import numpy as np
import pandas as pd
import pytest

from crowd_keras.sequences.labeling_functions import apply_lfs, lf_summary, span_lf

TEXT = {"a": "40 adults with asthma got placebo tablets"}     # tokens at 0 3 10 15 22 26 34


@pytest.mark.parametrize("spans", [[(0, 21), (3, 9)], [(3, 9), (0, 21)],      # nested
                                   [(0, 9), (3, 14)], [(3, 14), (0, 9)]])     # overlapping
def test_overlapping_or_nested_spans_of_one_function_are_one_span_in_any_order(spans):
    @span_lf(label="P")
    def spans_lf(doc):
        return spans
    votes = apply_lfs(TEXT, [spans_lf], progress=False)
    n = len(votes.token)
    assert votes.tags("BIO").tolist() == [1] + [2] * (n - 1)       # B I I ...: one span
    assert lf_summary(votes)["n_spans"].tolist() == [1]


def test_touching_spans_of_one_function_stay_two_spans():
    @span_lf(label="P")
    def two(doc):
        return [(3, 9), (0, 2)]
    votes = apply_lfs(TEXT, [two], progress=False)
    assert votes.tags("BIO").tolist() == [1, 1]
    assert lf_summary(votes)["n_spans"].tolist() == [2]
