"""Labeling functions for PICO's Participants spans, alone and beside the crowd.

Five functions written from the crowd's spans on the *training* abstracts (the phrases
workers marked most: "patients", "children with autism", "healthy volunteers", counts of
people, ages), never from the gold. Each reads one abstract (its text and whitespace
tokens) and votes on some tokens, abstaining on the rest:

* ``people_phrase``: a count or quantifier, up to three modifiers and a word for people
  ("40 hypertensive patients", "healthy volunteers", "postmenopausal women"), the first two
  in the abstract (later mentions are mostly results about them);
* ``with_condition``: a word for people followed by "with/who/undergoing ..." up to the next
  punctuation ("children with autism spectrum disorder"), the first two;
* ``age_range``: "aged 18-65 years", "between 6 and 12 years of age";
* ``n_equals``: a sample size "(n = 24)" and the word before it;
* ``statistics_outside`` (a tag function): votes *outside* on percentages, p-values and
  decimals, which are results, not participants.

Then: :func:`lf_summary` on the documents (with gold spans when given), the functions alone
(:class:`AbstainDawidSkene` on their votes), the crowd alone and the crowd with the functions
(the default span model, :func:`get_sequence_model`, on the crowd's annotations, then on the
annotations and the votes together: ``benchmarks/results/spans.md``, step 6).

Run from the repository root (PICO from ``CROWD_KERAS_DATA``, the cache or a download)::

    python examples/pico_lfs.py                     # the 191 acl17-test abstracts
    python examples/pico_lfs.py --splits train dev test acl17-test   # all 4,740 abstracts
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from crowd_keras import CrowdDataError  # noqa: E402
from crowd_keras.errors import DownloadError  # noqa: E402
from crowd_keras.datasets import PICO_SPLITS, load_pico  # noqa: E402
from crowd_keras.sequences.labeling_functions import (ABSTAIN, apply_lfs, lf_summary,  # noqa: E402
                                                      span_lf, tag_lf)
from crowd_keras.sequences.quality import spans_token_mask, token_prf  # noqa: E402
from crowd_keras.sequences.registry import get_sequence_model  # noqa: E402
from crowd_keras.sequences.weak import AbstainDawidSkene  # noqa: E402

PEOPLE = (r"(?:patients?|children|child|infants?|adolescents?|adults?|women|men|girls|boys|"
          r"subjects?|participants?|volunteers?|individuals?|persons?|people|smokers?|"
          r"students?|parents?|mothers?|neonates?|newborns?|elderly|outpatients?|inpatients?|"
          r"survivors?|athletes?|workers?|veterans?|residents?|pairs|couples|families|"
          r"recipients?|users?|drinkers?|nurses?|physicians?|toddlers?|twins)")
NUMBER = (r"(?:\d[\d,]*|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
          r"\w+teen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|"
          r"(?:\w+[- ])?(?:hundred|thousand)|several|all|many)")
MODIFIER = r"(?:[A-Za-z][\w-]*\s+){0,3}?"

_PHRASE = re.compile(rf"\b(?:{NUMBER}\s+)?{MODIFIER}{PEOPLE}\b", re.IGNORECASE)
_WITH = re.compile(rf"\b{MODIFIER}{PEOPLE}\s+(?:with|who|undergoing|receiving|suffering|"
                   rf"treated|scheduled|aged|having)\b[^.;:()]{{2,80}}", re.IGNORECASE)
_AGE = re.compile(r"\b(?:aged|ages?|between)\s+\d+(?:\.\d+)?\s*(?:-|to|and)\s*\d+"
                  r"(?:\s*(?:years?|months?|weeks?|yr)s?(?:\s+of\s+age|\s+old)?)?",
                  re.IGNORECASE)
_N = re.compile(r"\S+\s+\(\s*n\s*=\s*\d+\s*\)", re.IGNORECASE)
FIRST = 2
_STAT = re.compile(r"%|^\(?p\s*[<=>]|^[<=>]|^\(?\d+\.\d+")


@span_lf(label="Participants")
def people_phrase(doc):
    # the first mentions: an abstract names its participants early, then reports on them
    return [m.span() for m in _PHRASE.finditer(doc.text)][:FIRST]


@span_lf(label="Participants")
def with_condition(doc):
    return [m.span() for m in _WITH.finditer(doc.text)][:FIRST]


@span_lf(label="Participants")
def age_range(doc):
    return [m.span() for m in _AGE.finditer(doc.text)]


@span_lf(label="Participants")
def n_equals(doc):
    return [m.span() for m in _N.finditer(doc.text)]


@tag_lf(label="Participants")
def statistics_outside(doc):
    return ["O" if _STAT.search(tok) else ABSTAIN for tok in doc.tokens]


PICO_LFS = [people_phrase, with_condition, age_range, n_equals, statistics_outside]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, default=None,
                   help="folder that holds pico/ (default: CROWD_KERAS_DATA, the cache, or a "
                        "download)")
    p.add_argument("--splits", nargs="+", default=["acl17-test"], choices=PICO_SPLITS,
                   metavar="SPLIT",
                   help=f"PICO crowd splits to read: {', '.join(PICO_SPLITS)} (default: "
                        "acl17-test, whose gold half scores the models)")
    args = p.parse_args(argv)
    try:
        pico = load_pico(args.data, splits=tuple(dict.fromkeys(args.splits)))  # a split once
    except CrowdDataError as exc:   # a --data folder without PICO: one line, not a traceback
        p.error(str(exc))
    except DownloadError as exc:   # not on disk and not downloadable (offline, say): no usage
        p.exit(1, f"{p.prog}: error: {exc}\n")
    seq = pico.sequences
    gold = {d: s for d, s in pico.gold.items() if d in set(seq.doc_ids)}
    texts = dict(zip(seq.doc_ids, seq.texts))
    alone = apply_lfs(texts, PICO_LFS, labels=["Participants"])     # the functions only
    mixed = apply_lfs(seq, PICO_LFS)                                 # with the crowd
    print(lf_summary(alone, gold or None).round(3).to_string(index=False))
    on = np.isin(seq.tokens.doc, np.flatnonzero(np.isin(seq.doc_ids, list(gold))))
    truth = spans_token_mask(seq, gold)[on]
    for name, model, fit_on in (("functions alone", AbstainDawidSkene(), alone),
                                ("crowd alone", get_sequence_model(), seq),
                                ("crowd + functions", get_sequence_model(), mixed)):
        model.fit(fit_on)
        if gold:
            prf = token_prf(model.predict()[on] > 0, truth)
            print(f"{name}: token P {prf[0]:.3f} R {prf[1]:.3f} F1 {prf[2]:.3f}")
        else:
            print(f"{name}: {len(model.predict_spans())} spans")
    return 0


if __name__ == "__main__":
    sys.exit(main())
