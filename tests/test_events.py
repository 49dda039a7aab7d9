"""XML events from expat: the event sequence, text nodes, and malformed-document errors."""

import pytest

from xpfilt.software.events import (
    Document,
    Event,
    EventKind,
    MalformedDocumentError,
    document_depth,
    load_documents,
    parse_events,
)

O, C, T = EventKind.OPEN, EventKind.CLOSE, EventKind.TEXT


def test_event_sequence_with_everything():
    xml = (
        b'<?xml version="1.0" encoding="UTF-8"?>\n'
        b'<!DOCTYPE r [<!ENTITY e "ent">]>\n'
        b"<?pi data?><!-- top -->\n"
        b'<r x="1"><p:a xmlns:p="urn:p"/>t1<!-- c -->t2<![CDATA[<c>]]>&e;<b/></r>\n'
    )
    assert parse_events(xml) == [
        Event(O, "r", {"x": "1"}),
        Event(O, "p:a", {"xmlns:p": "urn:p"}),
        Event(C, "p:a"),
        Event(T, "", "t1"),
        Event(T, "", "t2<c>ent"),
        Event(O, "b", {}),
        Event(C, "b"),
        Event(C, "r"),
    ]


def test_text_split_by_processing_instruction():
    assert [e.value for e in parse_events(b"<r>a<?p?>b</r>") if e.kind is T] == ["a", "b"]


@pytest.mark.parametrize(
    "xml, where",
    [
        (b"<a><b></a>", "doc.xml:1:9: malformed XML: mismatched tag"),
        (b"<a>\n  <b x=1/></a>", "doc.xml:2:8: malformed XML: not well-formed (invalid token)"),
        (b"", "doc.xml:1:1: malformed XML: no element found"),
        (b"<a>", "doc.xml:1:4: malformed XML: no element found"),
        (b"<a/><b/>", "doc.xml:1:5: malformed XML: junk after document element"),
        (b"<a>&undefined;</a>", "doc.xml:1:4: malformed XML: undefined entity"),
    ],
)
def test_malformed_documents_name_file_line_and_column(xml, where):
    with pytest.raises(MalformedDocumentError) as info:
        parse_events(Document("doc.xml", xml))
    assert str(info.value) == where


def test_large_document_is_streamed_in_chunks():
    xml = b"<r>" + b"<a><b/></a>" * 20000 + b"</r>"
    events = parse_events(xml)
    assert len(events) == 2 + 4 * 20000
    assert document_depth(events) == 3


def test_load_documents_sorts_folders_by_code_point(tmp_path):
    for name in ["f10.xml", "f2.xml", "f1.xml", "skip.txt"]:
        (tmp_path / name).write_text("<a/>")
    assert [p.name for p in load_documents([tmp_path])] == ["f1.xml", "f10.xml", "f2.xml"]


@pytest.mark.parametrize("size", [0, 1, (1 << 16) - 1, 1 << 16, 3 * (1 << 16) + 5])
def test_a_document_is_read_whole_whatever_its_size(tmp_path, size):
    # Document.from_path reads with os.read, 64 KiB at a time
    data = bytes(i % 251 for i in range(size))
    path = tmp_path / "d.xml"
    path.write_bytes(data)
    assert Document.from_path(path) == Document("d.xml", data)
    assert Document.from_path(str(path)) == Document("d.xml", data)


def test_a_folder_is_no_document(tmp_path):
    with pytest.raises(IsADirectoryError):
        Document.from_path(tmp_path)
