"""Label Studio export reader: labeling configs and exports found by the reader defect hunt
(no server needed)."""
from __future__ import annotations

import pytest

pytest.importorskip("label_studio_sdk")

from crowd_keras import CrowdDataError  # noqa: E402
from crowd_keras.integrations import label_studio as ls  # noqa: E402


def _task(tid: int, *annotations: tuple) -> dict:
    """A full JSON task; each annotation is (annotation id, user, choices)."""
    return {"id": tid, "data": {"text": f"t{tid}", "opts": [{"value": "x"}, {"value": "y"}]},
            "annotations": [{"id": aid, "completed_by": user, "result": [
                {"from_name": "s", "to_name": "text", "type": "choices",
                 "value": {"choices": list(choices)}}]}
                for aid, user, choices in annotations]}


DYNAMIC = ('<View><Text name="text" value="$text"/>'
           '<Choices name="s" toName="text" value="$opts"/></View>')


def test_dynamic_choices_config_allows_the_values_of_the_tasks():
    # <Choices value="$opts"> lists its choices in each task's data, not in the config: the
    # values read are the classes, as without a config (not "not in the labeling config")
    export = [_task(1, (1, 2, ["x"]), (2, 3, ["y"])), _task(2, (3, 2, ["y"]))]
    read = ls.read_export(export, label_config=DYNAMIC)
    assert list(read.classes) == ["x", "y"]
    assert read.annotations.n_annotations == 3


def test_static_choices_config_still_rejects_unknown_values():
    static = DYNAMIC.replace(' value="$opts"/>', '><Choice value="x"/></Choices>')
    with pytest.raises(CrowdDataError, match="'y' of control 's' is not in the labeling config"):
        ls.read_export([_task(1, (1, 2, ["x"]), (2, 3, ["y"]))], label_config=static)
