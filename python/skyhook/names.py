"""The names of a store's namespace, which every layer shares.

A dataset is ``DATASET_NAME``; every write has a fresh generation and names its
objects ``<dataset>.<generation>.<n>``. A manifest read from storage is trusted
only after every object name in it is checked to be exactly that, for its own
dataset and generation: the client deletes what a manifest names.
"""

from __future__ import annotations

import re
import secrets
import time
from typing import NamedTuple

from skyhook.errors import InvalidRequestError

# No dots: "<dataset>." is a prefix no other dataset's names share.
DATASET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_\-]{0,127}")
# A name given to a version of a dataset (Dataset.tag).
TAG_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}")
# Unix seconds and random hex (older stores used 6 hex digits, new writes 16).
GENERATION = re.compile(r"[0-9]{1,20}[0-9a-f]{6,16}")
_OBJECT_NAME = re.compile(
    rf"(?P<dataset>{DATASET_NAME.pattern})\.(?P<generation>{GENERATION.pattern})"
    r"\.(?P<number>0|[1-9][0-9]{0,8})"
)


def check_dataset_name(name: object) -> None:
    if not isinstance(name, str) or not DATASET_NAME.fullmatch(name):
        raise InvalidRequestError(f"invalid dataset name {name!r}: use letters, digits, '_' and '-' (at most 128)")


_GENERATION_TOKEN = 16  # hex digits after the time


def new_generation() -> str:
    return f"{int(time.time())}{secrets.token_hex(_GENERATION_TOKEN // 2)}"


def generation_time(generation: str) -> float | None:
    """When a generation was made (seconds since the epoch); None if it does not say."""
    written = generation[:-_GENERATION_TOKEN]
    return float(written) if written.isdigit() else None


def object_name(dataset: str, generation: str, number: int) -> str:
    return f"{dataset}.{generation}.{number}"


class ObjectOwner(NamedTuple):
    dataset: str
    generation: str


def object_owner(name: str) -> ObjectOwner | None:
    """The dataset and generation a partition object belongs to; None for any
    other name (manifests, indexes, foreign objects)."""
    match = _OBJECT_NAME.fullmatch(name)
    return ObjectOwner(match["dataset"], match["generation"]) if match else None


def counted(count: int, noun: str) -> str:
    """'1 object', '2 objects': a count and its noun, singular or plural."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"
