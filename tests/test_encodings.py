"""One encoding policy for every engine: declared encodings and UTF-16/32 are transcoded to UTF-8
before an engine sees the bytes; empty documents and unknown or non-text encodings are
per-document errors that never cut a batch short."""

import pytest

from xpfilt.engines import filter_batch, make_engine
from xpfilt.lang.xpath import load_queries
from xpfilt.software.events import Document, DocumentError, MalformedDocumentError, utf8_document

ENGINES = ["reference", "lxml", "model", "fast"]
QUERIES = load_queries(["//a", "//a/b", "/a/c", "//b[@x='\u3042\u30a2']"]).queries
UTF8 = '<?xml version="1.0" encoding="{}"?>\n<a><b x="\u3042\u30a2">t</b></a>\n'


def _document(encoding, codec=None, name="doc.xml"):
    return Document(name, UTF8.format(encoding).encode(codec or encoding))


def _answers(engine, documents):
    queries = QUERIES if engine != "model" else QUERIES[:3]
    return [
        (r.name, r.matches, r.error) for r in filter_batch(make_engine(engine, queries), documents)
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_empty_document_is_malformed_and_the_batch_goes_on(engine):
    docs = [
        Document("a.xml", b"<a><b/></a>"),
        Document("empty.xml", b""),
        Document("c.xml", b"<a><c/></a>"),
    ]
    assert _answers(engine, docs) == [
        ("a.xml", (1, 2), None),
        ("empty.xml", None, "empty.xml:1:1: malformed XML: no element found"),
        ("c.xml", (1, 3), None),
    ]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "encoding, codec",
    [
        ("Shift_JIS", None),
        ("UTF-7", None),
        ("EUC-JP", None),
        ("UTF-16", None),
        ("UTF-16", "utf-16-be"),
        ("UTF-16LE", None),
        ("UTF-32", None),
        ("UTF-8", "utf-8-sig"),
    ],
)
def test_declared_encodings_and_byte_order_marks_answer_like_utf8(engine, encoding, codec):
    want = _answers(engine, [_document("UTF-8")])
    assert want[0][2] is None
    assert _answers(engine, [_document(encoding, codec)]) == want


@pytest.mark.parametrize("engine", ENGINES)
def test_latin1_names_are_transcoded_before_any_engine_sees_them(engine):
    doc = Document(
        "l.xml",
        '<?xml version="1.0" encoding="ISO-8859-1"?><a><b\u00e9/><c/></a>'.encode("latin-1"),
    )
    assert _answers(engine, [doc]) == [("l.xml", (1, 3), None)]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "encoding", ["x-unknown", "hex", "rot13", "zlib", "unicode_escape", "UTF\x00-8"]
)
def test_unknown_or_non_text_encodings_are_a_document_error(engine, encoding):
    bad = Document("bad.xml", f'<?xml version="1.0" encoding="{encoding}"?><a/>'.encode())
    assert _answers(engine, [bad, Document("ok.xml", b"<a/>")]) == [
        (
            "bad.xml",
            None,
            f"bad.xml: the declared encoding must be a known text encoding, not {encoding!r}",
        ),
        ("ok.xml", (1,), None),
    ]


def test_utf8_document_rewrites_the_declaration_and_keeps_utf8_as_it_is():
    plain = Document("p.xml", b'<?xml version="1.0"?><a/>')
    assert utf8_document(plain) is plain
    sjis = utf8_document(_document("Shift_JIS"))
    assert sjis.name == "doc.xml" and sjis.data == UTF8.format("UTF-8").encode()
    assert utf8_document(Document("b.xml", b"\xef\xbb\xbf<a/>")).data == b"<a/>"
    u16 = utf8_document(Document("u.xml", "<a>\u00e9</a>".encode("utf-16")))
    assert u16.data == "<a>\u00e9</a>".encode()


@pytest.mark.parametrize(
    "data, message",
    [
        (b"", "e.xml:1:1: malformed XML: no element found"),
        (
            b'<?xml version="1.0" encoding="Shift_JIS"?>\n<a>\x81</a>',
            "e.xml:2:4: malformed XML: the bytes are not valid Shift_JIS",
        ),
        (
            b'<?xml version="1.0" encoding="UTF-16"?><a/>',
            "e.xml:1:1: malformed XML: the document declares 'UTF-16' but is not encoded in it",
        ),
    ],
)
def test_utf8_document_errors_name_the_document(data, message):
    with pytest.raises(MalformedDocumentError) as info:
        utf8_document(Document("e.xml", data))
    assert str(info.value) == message


def test_non_text_encoding_is_a_document_error_not_a_lookup_error():
    with pytest.raises(DocumentError) as info:
        utf8_document(Document("z.xml", b'<?xml version="1.0" encoding="zlib"?><a/>'))
    assert not isinstance(info.value, MalformedDocumentError)


def test_regress_streams_utf8_and_skips_what_cannot_be_streamed(tmp_path):
    from xpfilt.verify.harness import stage_documents

    (tmp_path / "in").mkdir()
    (tmp_path / "in/u16.xml").write_bytes("<a><b/></a>".encode("utf-16"))
    (tmp_path / "in/plain.xml").write_bytes(b"<a/>")
    (tmp_path / "in/empty.xml").write_bytes(b"")
    (tmp_path / "in/zlib.xml").write_bytes(b'<?xml version="1.0" encoding="zlib"?><a/>')
    docs, skipped = stage_documents([tmp_path / "in"], tmp_path / "run")
    assert [name for name, _ in docs] == ["plain.xml", "u16.xml"]
    assert docs[0][1] == (tmp_path / "in/plain.xml").resolve()
    assert docs[1][1].read_bytes() == b"<a><b/></a>"
    assert skipped == [
        "empty.xml:1:1: malformed XML: no element found (not streamed)",
        "zlib.xml: the declared encoding must be a known text encoding, not 'zlib' (not streamed)",
    ]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("bom", [b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff"])
def test_a_byte_order_mark_alone_is_an_empty_document(engine, bom):
    """Only a byte order mark: after it nothing, so malformed like an empty document, for the
    engine called directly as for the batch loop (found by the fuzz harness)."""
    doc = Document("bom.xml", bom)
    with pytest.raises(MalformedDocumentError):
        make_engine(engine, QUERIES if engine != "model" else QUERIES[:3]).filter(doc)
    assert _answers(engine, [doc, Document("ok.xml", b"<a/>")]) == [
        ("bom.xml", None, "bom.xml:1:1: malformed XML: no element found"),
        ("ok.xml", (1,), None),
    ]
