"""The client's wire tables match the C++ storage side: error codes
(cpp/skyhook/errors/error.h) and statistic names."""

from __future__ import annotations

import re
from pathlib import Path

from skyhook.errors import SkyhookError
from skyhook.rpc import statistics
from skyhook.rpc.error_codes import ERROR_BY_CODE, ErrorCode

CPP = Path(__file__).parent.parent / "cpp" / "skyhook"
ERROR_H = CPP / "errors" / "error.h"
# Codes a reply never carries: success, and the push-back a method turns into "executed: none".
NOT_SENT = {"kOk", "kPushedBack"}


def error_h_codes() -> dict[str, int]:
    return {name: int(value) for name, value in re.findall(r"^\s*(k\w+) = (\d+),", ERROR_H.read_text(), re.M)}


def test_every_code_storage_sends_has_an_exception():
    codes = error_h_codes()
    assert codes["kOk"] == 0 and "kLimitExceeded" in codes
    sent = {value for name, value in codes.items() if name not in NOT_SENT}
    assert set(ERROR_BY_CODE) == sent
    assert all(issubclass(error, SkyhookError) for error in ERROR_BY_CODE.values())


def test_error_code_enum_mirrors_error_h():
    """Member for member: kInvalidRequest = 1 is ErrorCode.INVALID_REQUEST == 1."""
    expected = {re.sub(r"(?<!^)(?=[A-Z])", "_", name[1:]).upper(): value for name, value in error_h_codes().items()}
    assert {code.name: code.value for code in ErrorCode} == expected


def test_statistic_names_are_what_storage_sends():
    sources = "".join(path.read_text() for path in CPP.rglob("*.cc"))
    names = [value for name, value in vars(statistics).items() if name.isupper() and isinstance(value, str)]
    assert statistics.ROWS_SCANNED in names and statistics.CALLS in names
    assert [name for name in names if f'"{name}"' not in sources] == [statistics.CALLS]  # CALLS: the client's own
