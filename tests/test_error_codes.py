"""The client's table of storage error codes matches cpp/skyhook/protocol/error.h."""

from __future__ import annotations

import re
from pathlib import Path

from skyhook.errors import ERROR_BY_CODE, SkyhookError

ERROR_H = Path(__file__).parent.parent / "cpp" / "skyhook" / "protocol" / "error.h"
# Codes a reply never carries: success, and the push-back a method turns into "executed: none".
NOT_SENT = {"kOk", "kPushedBack"}


def test_every_code_storage_sends_has_an_exception():
    codes = {name: int(value) for name, value in re.findall(r"^\s*(k\w+) = (\d+),", ERROR_H.read_text(), re.M)}
    assert codes["kOk"] == 0 and "kLimitExceeded" in codes
    sent = {value for name, value in codes.items() if name not in NOT_SENT}
    assert set(ERROR_BY_CODE) == sent
    assert all(issubclass(error, SkyhookError) for error in ERROR_BY_CODE.values())
