"""PICO (real data): the README's reference figures, reproduced on the acl17-test slice."""
import numpy as np
import pytest

from conftest import require_data
from crowd_keras.datasets import load_pico
from crowd_keras.sequences.hmm import HMMCrowd
from crowd_keras.sequences.models import TokenDawidSkene, TokenMajorityVote
from crowd_keras.sequences.quality import spans_token_mask, token_prf


@pytest.fixture(scope="module")
def acl17():
    return load_pico(require_data("pico"), splits=("acl17-test",))


def gold_half(pico):
    seq = pico.sequences
    on = np.isin(seq.tokens.doc, np.flatnonzero(np.isin(seq.doc_ids, list(pico.gold))))
    return on, spans_token_mask(seq, pico.gold)[on]


def test_readme_figures_of_the_authors_aggregates_and_token_majority(acl17):
    on, gold = gold_half(acl17)
    assert on.any() and len(acl17.gold) == 98
    expect = {"HMMCrowd": (0.597, 0.840, 0.698), "DawidSkene": (0.764, 0.730, 0.746),
              "MajorityVote": (0.849, 0.611, 0.710)}
    for name, prf in expect.items():
        spans = {d: acl17.authors[name][d] for d in acl17.gold}
        got = token_prf(spans_token_mask(acl17.sequences, spans)[on], gold)
        assert np.round(got, 3).tolist() == list(prf), name
    mv = TokenMajorityVote().fit(acl17.sequences)
    assert np.round(token_prf(mv.predict()[on] > 0, gold), 3).tolist() == [0.812, 0.613, 0.699]


def test_token_dawid_skene_and_hmm_crowd_on_the_191_abstracts(acl17):
    on, gold = gold_half(acl17)
    seq = acl17.sequences
    summary = seq.summary
    assert summary.spans == summary.spans_used and summary.empty_dropped == 0
    ds = TokenDawidSkene().fit(seq)
    assert round(token_prf(ds.predict()[on] > 0, gold)[2], 3) == 0.739
    hmm = HMMCrowd().fit(seq.with_scheme("BIO"))
    p, r, f = token_prf(hmm.predict()[on] > 0, gold)
    assert round(f, 3) == 0.655 and r > p          # HMM-Crowd: high recall, low precision
    spans = ds.predict_spans()
    assert set(spans.columns) == {"doc", "start", "end", "label", "text", "score"}
    assert (spans["label"] == "Participants").all() and spans["score"].between(0.5, 1).all()


def _tiny_pico(folder, crowd_test, docs=None):
    import json

    docs = docs or [{"docid": "1", "text": "adults with asthma"},
                    {"docid": "2", "text": "children aged five"}]
    # every file holds a record: an empty one is refused as truncated
    lines = {"docs.jsonl": docs, "crowd_test.jsonl": crowd_test, "crowd_dev.jsonl": [],
             "gold_acl17_even.jsonl": [{"docid": "1", "spans": []}],
             "authors_aggregates_acl17.jsonl": [{"docid": "1", "HMMCrowd": [], "DawidSkene": [],
                                                 "MajorityVote": []}]}
    for name, rows in lines.items():
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_a_repeated_document_is_refused_not_misaligned(tmp_path):
    from crowd_keras import CrowdDataError

    one = {"docid": "1", "spans": {"w1": [[0, 6]]}}
    two = {"docid": "2", "spans": {"w2": [[0, 8]]}}
    ok = load_pico(_tiny_pico(tmp_path, [one, two]), splits=("test",))
    assert list(ok.split) == ["test", "test"] and len(ok.sequences.doc_ids) == 2
    # the same split twice gave 2 documents but 4 split names
    with pytest.raises(ValueError, match="name a split twice"):
        load_pico(tmp_path, splits=("test", "test"))
    _tiny_pico(tmp_path, [one, two, dict(one, spans={})])
    with pytest.raises(CrowdDataError, match="crowd_test.jsonl: docid '1' has a second record"):
        load_pico(tmp_path, splits=("test",))
    _tiny_pico(tmp_path, [one], docs=[{"docid": "1", "text": "a"}, {"docid": "1", "text": "b"}])
    with pytest.raises(CrowdDataError, match="docs.jsonl: docid '1' has two records"):
        load_pico(tmp_path, splits=("test",))


def test_a_record_without_its_keys_names_the_file_and_line(tmp_path):
    from crowd_keras import CrowdDataError

    _tiny_pico(tmp_path, [{"docid": "1", "spans": {}}, {"docid": "2"}])
    with pytest.raises(CrowdDataError, match=r"crowd_test.jsonl, line 2: a record is an object "
                                             r"with \['docid', 'spans'\]"):
        load_pico(tmp_path, splits=("test",))       # was KeyError: 'spans'


def test_no_split_is_refused_not_an_empty_corpus(tmp_path):
    # splits=() gave a SequenceAnnotations of no document, without a word
    one = {"docid": "1", "spans": {"w1": [[0, 6]]}}
    folder = _tiny_pico(tmp_path, [one])
    with pytest.raises(ValueError, match="splits names no split"):
        load_pico(folder, splits=())
    assert len(load_pico(folder, splits=("test",)).sequences.doc_ids) == 1
