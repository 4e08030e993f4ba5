"""The label models' core surface as a user meets it: new annotations given as a frame or a
matrix, parameter checks that name the parameter, and the like."""
import numpy as np
import pandas as pd
import pytest

from crowd_keras import Annotations, CrowdDataError
from crowd_keras.aggregation import DawidSkene, MajorityVote, MixtureOfGroupsModel


@pytest.fixture(scope="module")
def frame():
    return pd.DataFrame({"task": ["t1", "t1", "t1", "t2", "t2", "t3", "t3"],
                         "worker": ["a", "b", "c", "a", "b", "a", "c"],
                         "label": ["cat", "cat", "dog", "dog", "dog", "owl", "owl"]})


@pytest.mark.parametrize("model", [DawidSkene(), MajorityVote()], ids=type)
def test_a_new_frame_with_a_few_of_the_classes_is_read_with_the_fitted_classes(model, frame):
    """Read alone, a batch labelled 'cat' only has the one class ['cat']: predict_proba and
    the quality scores read a frame with the fitted classes instead of refusing it."""
    model.fit(frame)
    new = frame[frame.task == "t1"].assign(label="cat")
    expected = model.predict_proba(Annotations.from_frame(new, classes=["cat", "dog", "owl"]))
    np.testing.assert_array_equal(model.predict_proba(new), expected)
    assert model.predict_labels(new).tolist() == ["cat"]
    assert model.consensus_quality(new).shape == (1,)
    assert model.annotation_quality(new).shape == (3,)
    with pytest.raises(CrowdDataError, match="'emu'.*not one of the classes"):
        model.predict_proba(new.assign(label="emu"))


def test_a_new_matrix_is_read_as_codes_of_the_fitted_classes():
    L = np.array([[0, 1, 2], [1, 1, 1], [2, 2, 0], [0, 0, 0]])
    model = DawidSkene().fit(L)
    new = np.array([[0, 0, -1], [1, 1, 0]])   # code 2 absent: still three classes
    assert model.predict_proba(new).shape == (2, 3)
    with pytest.raises(CrowdDataError, match="outside the 3 classes"):
        model.predict_proba(np.array([[3, 0, 0]]))


def test_mixture_of_groups_group_probabilities_of_a_new_frame(frame):
    model = MixtureOfGroupsModel(num_groups=2, restarts=1).fit(frame)
    new = frame[frame.task == "t1"].assign(label="cat")
    assert model.group_probabilities(new).shape == (3, model.memberships_.shape[1])
