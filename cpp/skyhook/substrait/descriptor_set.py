"""Writes the Substrait protobuf descriptors of the pinned `substrait` package as
one FileDescriptorSet, from which protoc generates the C++ classes that storage
validates requests with. Client and storage so agree on one Substrait version."""

from __future__ import annotations

import importlib
import pkgutil
import sys

import substrait.gen.proto as substrait_proto
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import FileDescriptor


def descriptor_set() -> descriptor_pb2.FileDescriptorSet:
    files: dict[str, descriptor_pb2.FileDescriptorProto] = {}

    def add(descriptor: FileDescriptor) -> None:  # dependencies first, as protoc wants
        if descriptor.name in files:
            return
        for dependency in descriptor.dependencies:
            add(dependency)
        files[descriptor.name] = descriptor_pb2.FileDescriptorProto()
        descriptor.CopyToProto(files[descriptor.name])

    for module in pkgutil.walk_packages(substrait_proto.__path__, substrait_proto.__name__ + "."):
        loaded = importlib.import_module(module.name)
        if hasattr(loaded, "DESCRIPTOR"):
            add(loaded.DESCRIPTOR)
    return descriptor_pb2.FileDescriptorSet(file=list(files.values()))


if __name__ == "__main__":
    with open(sys.argv[1], "wb") as out:
        out.write(descriptor_set().SerializeToString())
