"""Labeling functions for YouTube comment spam, as in Snorkel's introductory tutorial.

Shared by ``examples/snorkel_youtube_spam.py`` and ``benchmarks/snorkel_label_model.py``.
The first seven functions are the tutorial's keyword, regex and heuristic functions; the
tutorial's spaCy and TextBlob functions are replaced by keyword functions so that nothing
beyond Snorkel and pandas is needed. Data: ``youtube_spam/`` of the shared data folder
(``COMMENT_ID,AUTHOR,DATE,CONTENT,CLASS``; 1 = spam, 0 = ham).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Union

import numpy as np
import pandas as pd
from snorkel.labeling import PandasLFApplier, labeling_function

ABSTAIN, HAM, SPAM = -1, 0, 1

# Snorkel's tutorial trains on the first four videos and tests on the fifth (Shakira).
TRAIN_FILES = ("Youtube01-Psy.csv", "Youtube02-KatyPerry.csv", "Youtube03-LMFAO.csv",
               "Youtube04-Eminem.csv")
TEST_FILES = ("Youtube05-Shakira.csv",)


def load_youtube_spam(folder: Union[str, Path]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(train, test) frames of the YouTube spam collection; train = videos 1-4, test = video 5."""
    folder = Path(folder)
    missing = [f for f in TRAIN_FILES + TEST_FILES if not (folder / f).exists()]
    if missing:
        raise FileNotFoundError(f"YouTube spam files {missing} not found in {folder}")

    def read(files: tuple[str, ...]) -> pd.DataFrame:
        frames = [pd.read_csv(folder / f).assign(video=i) for i, f in enumerate(files)]
        df = pd.concat(frames, ignore_index=True)
        return df.rename(columns={"CONTENT": "text", "CLASS": "label"})

    return read(TRAIN_FILES), read(TEST_FILES)


@labeling_function()
def keyword_my(x) -> int:
    """Many spam comments talk about 'my channel', 'my video'."""
    return SPAM if "my" in x.text.lower() else ABSTAIN


@labeling_function()
def keyword_subscribe(x) -> int:
    return SPAM if "subscribe" in x.text.lower() else ABSTAIN


@labeling_function()
def keyword_link(x) -> int:
    return SPAM if "http" in x.text.lower() else ABSTAIN


@labeling_function()
def keyword_please(x) -> int:
    return SPAM if any(w in x.text.lower() for w in ("please", "plz")) else ABSTAIN


@labeling_function()
def keyword_song(x) -> int:
    """Comments about the song are usually ham."""
    return HAM if "song" in x.text.lower() else ABSTAIN


@labeling_function()
def regex_check_out(x) -> int:
    return SPAM if re.search(r"check.*out", x.text, flags=re.I) else ABSTAIN


@labeling_function()
def short_comment(x) -> int:
    """Ham comments are often short, such as 'cool video!'."""
    return HAM if len(x.text.split()) < 5 else ABSTAIN


@labeling_function()
def keyword_views(x) -> int:
    """Comments on the view count ('2 billion views') are ham."""
    return HAM if re.search(r"\b(views|billion|million)\b", x.text, flags=re.I) else ABSTAIN


@labeling_function()
def keyword_money(x) -> int:
    found = re.search(r"\b(money|free|earn|cash|gift|win)\b", x.text, flags=re.I)
    return SPAM if found else ABSTAIN


@labeling_function()
def keyword_love(x) -> int:
    """'I love this', 'love her voice' without a link: ham."""
    text = x.text.lower()
    return HAM if "love" in text and "http" not in text else ABSTAIN


LFS = [keyword_my, keyword_subscribe, keyword_link, keyword_please, keyword_song,
       regex_check_out, short_comment, keyword_views, keyword_money, keyword_love]


def apply_lfs(df: pd.DataFrame) -> np.ndarray:
    """Label matrix ``L`` (comments × functions, -1 = abstain) of :data:`LFS` on ``df``."""
    return PandasLFApplier(lfs=LFS).apply(df=df, progress_bar=False)


if __name__ == "__main__":   # a module of functions: point a newcomer at the script that runs them
    print("youtube_spam_lfs.py holds the labeling functions of the Snorkel tutorial; run them "
          "with: python examples/snorkel_youtube_spam.py [--data FOLDER]")
