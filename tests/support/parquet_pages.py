"""The encodings of a Parquet column chunk's data pages, read from their page
headers (Thrift compact protocol): pyarrow lists a chunk's encodings but not
which pages use them, so a chunk that fell back from dictionary to plain pages
part way looks like one that did not."""

from __future__ import annotations

import pyarrow.parquet as pq

DATA_PAGE, DICTIONARY_PAGE, DATA_PAGE_V2 = 0, 2, 3
ENCODINGS = {0: "PLAIN", 2: "PLAIN_DICTIONARY", 8: "RLE_DICTIONARY"}


class _Reader:
    def __init__(self, data: bytes, position: int) -> None:
        self.data, self.position = data, position

    def byte(self) -> int:
        self.position += 1
        return self.data[self.position - 1]

    def varint(self) -> int:
        shift = result = 0
        while True:
            byte = self.byte()
            result |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return result

    def zigzag(self) -> int:
        value = self.varint()
        return (value >> 1) ^ -(value & 1)

    def skip(self, kind: int) -> None:
        if kind == 3:
            self.position += 1
        elif kind in (4, 5, 6):
            self.varint()
        elif kind == 7:
            self.position += 8
        elif kind == 8:
            length = self.varint()  # before the position moves past the varint
            self.position += length
        elif kind in (9, 10):
            header = self.byte()
            size = header >> 4 if header >> 4 != 15 else self.varint()
            for _ in range(size):
                self.skip(header & 0x0F)
        elif kind == 12:
            self.struct(lambda field, kind: self.skip(kind))
        elif kind not in (1, 2):
            raise ValueError(f"Thrift type {kind} in a page header")

    def struct(self, on_field) -> None:
        field = 0
        while (header := self.byte()) != 0:
            delta, kind = header >> 4, header & 0x0F
            field = field + delta if delta else self.zigzag()
            on_field(field, kind)


def data_page_encodings(data: bytes, chunk: pq.ColumnChunkMetaData) -> list[str]:
    """The encoding of each data page of the chunk, in order."""
    start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
    reader, encodings = _Reader(data, start), []
    while reader.position < start + chunk.total_compressed_size:
        header: dict[str, int] = {}

        def page_field(field: int, kind: int) -> None:
            if field in (1, 3) and kind == 5:
                header["type" if field == 1 else "size"] = reader.zigzag()
            elif field in (5, 8) and kind == 12:  # data page (v2) header: its encoding
                reader.struct(
                    lambda inner, inner_kind: (
                        header.__setitem__("encoding", reader.zigzag())
                        if (inner, inner_kind) == ((2 if field == 5 else 4), 5)
                        else reader.skip(inner_kind)
                    )
                )
            else:
                reader.skip(kind)

        reader.struct(page_field)
        if header["type"] in (DATA_PAGE, DATA_PAGE_V2):
            encodings.append(ENCODINGS.get(header["encoding"], str(header["encoding"])))
        reader.position += header["size"]
    return encodings


def dictionary_throughout(data: bytes, chunk: pq.ColumnChunkMetaData) -> bool:
    """What storage checks (from the chunk's encoding statistics) before it reads a chunk as indices."""
    encodings = data_page_encodings(data, chunk)
    return chunk.has_dictionary_page and bool(encodings) and all(e.endswith("DICTIONARY") for e in encodings)
