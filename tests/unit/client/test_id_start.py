"""Which parameters take the start of a drawer id (``Param.id_start``: get and timeline) and which take whole ids
only (delete, restore: what changes data)."""

from __future__ import annotations

import pytest

from mempal.methods import METHODS
from mempal.methods.validate import ParamError, is_id_prefix, validate

WHOLE = "cdcfe5ee-eeb3-5f5a-9228-ae2c13c81870"


def test_get_and_timeline_take_a_start_of_an_id() -> None:
    assert validate(METHODS["get"], {"drawer_id": ["CDCFE5EE", WHOLE]})["drawer_id"] == ("cdcfe5ee", WHOLE)
    assert validate(METHODS["timeline"], {"drawer_id": "cdcfe5ee-ee"})["drawer_id"] == "cdcfe5ee-ee"


@pytest.mark.parametrize("bad", ["cdc", "zz12abcd", "cdcfe5eee", "cdcfe5ee_eeb3", WHOLE + "0"])
def test_what_is_not_a_start_of_an_id_is_refused(bad: str) -> None:
    assert not is_id_prefix(bad)
    with pytest.raises(ParamError, match="is not a drawer id"):
        validate(METHODS["get"], {"drawer_id": bad})


def test_what_changes_data_takes_whole_ids_and_says_where_a_start_works() -> None:
    for name in ("delete", "restore"):
        with pytest.raises(ParamError, match="finds its drawer with get; this takes whole ids"):
            validate(METHODS[name], {"drawer_id": "cdcfe5ee"})
        assert validate(METHODS[name], {"drawer_id": WHOLE})["drawer_id"] == (WHOLE,)
