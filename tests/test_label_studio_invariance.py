"""The Label Studio classification path gives each task the same prediction and score however
the export is arranged: found by the invariance hunt of the Choices/Rating path."""
import copy

import numpy as np
import pytest

from crowd_keras.aggregation import get_label_model
from crowd_keras.aggregation.quality import consensus_quality
from crowd_keras.integrations import label_studio as ls

CLASSES = ("positive", "negative", "neutral")


def _export(n_tasks=30, seed=0):
    """A full JSON export: users 11-15 of accuracies 0.9 down to 0.5, three per task."""
    rng = np.random.default_rng(seed)
    accuracy = dict(zip(range(11, 16), (0.9, 0.8, 0.7, 0.6, 0.5)))
    tasks, aid = [], 0
    for t in range(1, n_tasks + 1):
        truth = int(rng.integers(3))
        anns = []
        for user in rng.choice(list(accuracy), size=3, replace=False):
            aid += 1
            label = truth if rng.random() < accuracy[int(user)] else int(rng.integers(3))
            anns.append({"id": aid, "completed_by": int(user), "was_cancelled": False,
                         "result": [{"from_name": "sentiment", "to_name": "text",
                                     "type": "choices",
                                     "value": {"choices": [CLASSES[label]]}}]})
        tasks.append({"id": t, "data": {"text": f"task {t}"}, "annotations": anns})
    return tasks


def _with_unlabelled(tasks, n=200):
    """The export with ``n`` more tasks that hold no label: all skipped, or none yet (an
    export of all tasks)."""
    more = copy.deepcopy(tasks)
    for k in range(n):
        skipped = [{"id": 10_000 + k, "completed_by": 11, "was_cancelled": True,
                    "result": []}] if k % 2 else []
        more.append({"id": 1000 + k, "data": {"text": "later"}, "annotations": skipped,
                     "predictions": []})
    return more


def _scores(source, method):
    export = ls.read_export(source)
    predictions = ls.predictions_from_model(export, method, "v")
    return {p["task"]: (p["result"][0]["value"]["choices"], p["score"]) for p in predictions}


@pytest.mark.parametrize("method", ["majority_vote", "glad", "mace"])
def test_tasks_without_a_label_leave_the_scores_of_the_others(method):
    # the held-out class shares of the consensus quality counted the unlabelled tasks'
    # prior guesses (uniform for GLAD and MACE): 200 of them moved the labelled tasks'
    # scores by up to 0.18, so an export of all tasks, or a JSON export (which keeps the
    # tasks whose annotations were all skipped; JSON_MIN and CSV leave them out), scored
    # the same tasks otherwise
    tasks = _export()
    alone, among = _scores(tasks, method), _scores(_with_unlabelled(tasks), method)
    assert alone.keys() == among.keys()
    for task, (label, score) in alone.items():
        assert among[task][0] == label
        assert among[task][1] == pytest.approx(score, abs=1e-12)


def test_consensus_quality_of_unlabelled_items_is_the_labelled_items_share():
    # the core function: items without a label take no part in the class shares, and get
    # the consensus quality of the labelled items' shares (held out of nothing)
    export = ls.read_export(_with_unlabelled(_export(), n=50))
    model = get_label_model("glad").fit(export.annotations)
    labelled = export.annotations.annotations_per_item() > 0
    quality = model.consensus_quality()
    alone = ls.read_export(_export())
    np.testing.assert_allclose(
        quality[labelled], get_label_model("glad").fit(alone.annotations).consensus_quality(),
        rtol=0, atol=1e-12)
    assert np.all((quality[~labelled] > 0) & (quality[~labelled] < 1))


def test_a_gold_task_without_crowd_labels_still_counts_in_the_shares():
    # a task held at its ground truth (an item_log_prior row of -inf but for its class) says
    # which class it is, though no annotator labelled it: it counts in the others' shares,
    # where the same task without the clamp (the model's guess alone) does not
    export = ls.read_export(_with_unlabelled(_export(), n=40))
    ann = export.annotations
    model = get_label_model("majority_vote").fit(ann)
    post = model.posteriors_.copy()
    unlabelled = ann.annotations_per_item() == 0
    prior = np.zeros_like(post)
    prior[unlabelled, :2] = -np.inf                    # every unlabelled task held at neutral
    post[unlabelled] = np.eye(3)[2]
    held = consensus_quality(post, ann, item_log_prior=prior)
    guessed = consensus_quality(post, ann)
    labelled = ~unlabelled
    assert np.abs(held[labelled] - guessed[labelled]).max() > 1e-3
    np.testing.assert_array_equal(held[unlabelled], 1.0)


def _as_json_min(tasks, emails):
    """The JSON_MIN rows of a full JSON export: one per annotation, the annotator by e-mail."""
    return [{"text": task["data"]["text"], "id": task["id"],
             "sentiment": ann["result"][0]["value"]["choices"][0],
             "annotator": emails[ann["completed_by"]], "annotation_id": ann["id"]}
            for task in tasks for ann in task["annotations"]]


def test_the_default_chooses_alike_from_json_and_json_min():
    # JSON names annotators by user id, JSON_MIN by e-mail: here the e-mails sort in the
    # reverse order of the ids, so the annotator codes are reversed. The default's folds
    # ranked annotations by code: the two reads hid other labels together and scored
    # the candidates apart (on a 40-task probe they chose BWA and majority vote)
    tasks = _export(n_tasks=120, seed=4)
    emails = {user: f"{chr(ord('z') - (user - 11))}@example.com" for user in range(11, 16)}
    by_id = ls.read_export(tasks)
    by_email = ls.read_export(_as_json_min(tasks, emails), control="sentiment")
    assert list(by_email.annotations.annotator_ids) == sorted(emails.values())
    a = get_label_model("auto").fit(by_id.annotations)
    b = get_label_model("auto").fit(by_email.annotations)
    assert a.chosen_ == b.chosen_
    for name, score in a.heldout_agreement_.items():
        assert b.heldout_agreement_[name] == pytest.approx(score, abs=1e-12), name
    ours = ls.predictions_from_model(by_id, "auto", "v")
    theirs = ls.predictions_from_model(by_email, "auto", "v")
    assert [(p["task"], p["result"][0]["value"]["choices"]) for p in ours] == \
        [(p["task"], p["result"][0]["value"]["choices"]) for p in theirs]
    np.testing.assert_allclose([p["score"] for p in ours], [p["score"] for p in theirs],
                               rtol=0, atol=1e-12)
