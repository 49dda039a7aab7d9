"""The fast engine's compiled scanner (xpfilt/software/compiled.py) against expat.

It may accept only documents expat accepts (and then answer like the reference); everything
else it defers to the expat path. ``make fuzz``'s ``scanner`` category does the same on
100,000 mutated documents."""

import random
import re
from xml.parsers import expat

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xpfilt.lang.xpath import parse_query
from xpfilt.software.events import Document, DocumentError, utf8_document
from xpfilt.software.fast import FastFilter
from xpfilt.software.reference import ReferenceFilter
from xpfilt.verify.fuzz.generate import SCANNER_TOKENS, scanner_document

from .conftest import examples
from .strategies import documents

pytest.importorskip("numba")

QUERIES = [parse_query(t, i + 1) for i, t in enumerate(["/a", "//b", "/a/*/c", "//k"])]


def _expat_accepts(data: bytes) -> bool:
    try:
        expat.ParserCreate().Parse(utf8_document(Document("d.xml", data)).data, True)
    except (expat.ExpatError, DocumentError):
        return False
    return True


def _verdicts(datas):
    engine = FastFilter(QUERIES)
    assert engine.stats["engine"] == "compiled"
    return engine.compiled_verdicts(datas)


ACCEPTED = [
    b"<a/>",
    b"<a><b/></a>",
    b" \n<a x=\"1\" y='2'><b>t</b><c/></a>\n ",
    b'<?xml version="1.0"?><a/>',
    b"<?xml version='1.0' encoding='UTF-8' standalone='yes'?>\n<a/>",
    b'<?xml version="1.0" encoding="utf-8" ?><!-- c --><?pi x?><a/><!---->',
    b"<a>&lt;&gt;&amp;&apos;&quot;&#9;&#x41;&#1114111;</a>",
    b"<a k='&lt;&#60;'>\xc3\xa9\xe2\x82\xac\xf0\x90\x80\x80\xef\xbf\xbd</a>",
    b"<a><![CDATA[<&]]]></a>",
    b"<a.b-c_d:e><b  /></a.b-c_d:e >",
    b"<a\n\tk\n=\n'1'\n/>",
    b"<a>]]</a>",
    b"<a><!-- - --></a>",
    b'<a kxk="1" kyk="2" k="3" kk="4"/>',  # names alike in length, first and last bytes
    # names and values read eight bytes at a time, and their ends
    b'<abcdefghijkl x="1&amp;2" yyyyyyyyyy="\xc3\xa9t\xc3\xa9"><abcdefgh/></abcdefghijkl>',
    b'<a k="12345678901234567890" q="a\'b" r=\'"\'/>',
    b"<abcdefghijklmnop></abcdefghijklmnop>",
    b"<!-- a long comment\n\tover - lines-->\n<a><!--\xc3\xa9-12345678--></a>",
]
#: Each is malformed (expat rejects it) or outside the common case (deferred regardless).
DEFERRED = [
    b"",
    b"   ",
    b"\xef\xbb\xbf<a/>",
    b"<a>",
    b"<a></b>",
    b"<a/><b/>",
    b"x<a/>",
    b"<a/>x",
    b"<a>]]></a>",
    b'<a k="1" k="2"/>',
    b'<a kxk="1" k="2" kyk="3" kxk="4"/>',
    b"<abcdefghijkl></abcdefghijkX>",
    b"<abcdefgh></abcdefgX>",
    b"<abcdefghijklmnop></abcdefghijklmnoq>",
    b'<a k="12\x01"/>',
    b'<a k="1\x7f"/>',
    b'<a k="1<2"/>',
    b'<a k="1&e;"/>',
    b'<aaaaaaaaaaaa k="1"',
    b"<a><!-- 12345678 -- x --></a>",
    b"<a><!-- 12345678\x01 --></a>",
    b"<a/><!-- 12345678",
    b'<a k="1"n="2"/>',
    b"<a k=1/>",
    b'<a k="<"/>',
    b"<a/ >",
    b"</a>",
    b"<a></a >x",
    b"<a><!----->b</a>",
    b"<a><!--->b</a>",
    b"<a><!-- -- --></a>",
    b"<!----><a/><!----->",
    b"<a>&e;</a>",
    b"<a>&#0;</a>",
    b"<a>&#X41;</a>",
    b"<a>&#xD800;</a>",
    b"<a>&#1114112;</a>",
    b"<a>&amp</a>",
    b"<a>\x7f</a>",
    b"<a>\x01</a>",
    b"<a>\xc2\x80</a>",
    b"<a>\xc0\xaf</a>",
    b"<a>\xed\xa0\x80</a>",
    b"<a>\xef\xbf\xbe</a>",
    b"<a>\xf4\x90\x80\x80</a>",
    b"<a>\xe2\x82</a>",
    b"<\xc3\xa9/>",
    b"<a\xc3\xa9/>",
    b'<?xml version="1.1"?><a/>',
    b'<?xml version="1.0" encoding="latin-1"?><a/>',
    b'<?xml version="1.0" standalone="yes" encoding="utf-8"?><a/>',
    b'<?xml version="1.0" standalone="no" standalone="no"?><a/>',
    b" <?xml version='1.0'?><a/>",
    b"<a><?xml x?></a>",
    b"<a><?XmL?></a>",
    b"<a><?a:b?></a>",
    b"<a><?pi?x?></a>",
    b"<!DOCTYPE a><a/>",
    b'<!DOCTYPE a [<!ENTITY e "x">]><a>&e;</a>',
    b"<![CDATA[x]]><a/>",
    b"<a><![cdata[x]]></a>",
    b"<a>" * 2000 + b"</a>" * 2000,  # deeper than the scanner follows
]


@pytest.mark.parametrize("data", ACCEPTED)
def test_the_common_case_is_compiled_and_answers_like_the_reference(data):
    assert _expat_accepts(data)
    assert _verdicts([data]) == [True]
    engine = FastFilter(QUERIES)
    assert engine.filter(data) == ReferenceFilter(QUERIES).filter(data)
    assert engine.stats["compiled_documents"] == 1


@pytest.mark.parametrize("data", DEFERRED)
def test_anything_else_goes_to_expat(data):
    assert _verdicts([data]) == [False]
    engine, reference = FastFilter(QUERIES), ReferenceFilter(QUERIES)
    try:
        expected = reference.filter(data)
    except DocumentError as exc:
        with pytest.raises(DocumentError, match=re.escape(str(exc))):  # the same error
            engine.filter(data)
    else:
        assert engine.filter(data) == expected
    assert engine.stats["expat_documents"] == 1


def test_one_batch_mixes_both_paths_in_order():
    datas = ACCEPTED + DEFERRED
    engine, reference = FastFilter(QUERIES), ReferenceFilter(QUERIES)
    for data, found in zip(datas, engine.filter_many(datas)):
        try:
            expected = sorted(reference.filter(data))
        except DocumentError as exc:
            assert isinstance(found, DocumentError) and str(found) == str(exc)
        else:
            assert found.tolist() == expected
    assert engine.stats["compiled_documents"] == len(ACCEPTED)


@examples(ci=300)
@given(
    doc=documents(),
    inserts=st.lists(
        st.tuples(st.sampled_from(SCANNER_TOKENS), st.floats(0, 1)), min_size=0, max_size=3
    ),
)
def test_accepted_only_if_expat_accepts(doc, inserts):
    data = bytearray(doc)
    for token, where in inserts:
        i = int(where * len(data))
        data[i:i] = token
    data = bytes(data)
    [accepted] = _verdicts([data])
    if accepted:
        assert _expat_accepts(data)
        assert FastFilter(QUERIES).filter(data) == ReferenceFilter(QUERIES).filter(data)


def test_fuzz_documents_seeded():
    rng = random.Random(3)
    datas = [scanner_document(rng)[1] for _ in range(2000)]
    verdicts = _verdicts(datas)
    assert sum(verdicts) > 100  # the scanner is exercised, not deferring everything
    assert all(_expat_accepts(d) for d, ok in zip(datas, verdicts) if ok)


@pytest.mark.parametrize(
    "query_file", ["nitf-d8-p15-n2000.txt", "nitf-d6-p15-pred1-n1000.txt"], ids=["paths", "preds"]
)
def test_the_jit_loop_answers_like_the_ahead_of_time_build(monkeypatch, data, query_file):
    """Both builds of the compiled loop (``scan``, ``scan_tree``, ``answers``,
    ``format_numbers``) give the same text on NITF documents and the same verdicts on the
    accepted and deferred examples; ``XPFILT_COMPILED`` picks the build."""
    from xpfilt.lang.xpath import load_queries
    from xpfilt.software import scanner
    from xpfilt.software.events import load_documents
    from xpfilt.software.fast import compiled_loop

    queries = load_queries(data / "queries" / query_file).queries
    numbers = [q.number for q in queries]
    docs = [Document.from_path(p) for p in load_documents([data / "nitf" / "docs"])[:40]]
    docs.append(Document("bad.xml", b"<nitf><head></nitf>"))
    datas = ACCEPTED + DEFERRED
    answers = {}
    for mode in ("1", "jit"):
        monkeypatch.setenv("XPFILT_COMPILED", mode)
        engine = FastFilter(queries)
        answers[engine.stats["loop"]] = (
            [str(a) for a in engine.filter_many_text(docs, numbers)],
            engine.compiled_verdicts(datas),
        )
    if "aot" not in answers:
        pytest.skip("no current ahead-of-time build (make setup builds it)")
    assert answers["aot"] == answers["jit"]
    text, verdicts = answers["jit"]
    assert verdicts == [True] * len(ACCEPTED) + [False] * len(DEFERRED)
    assert sum(bool(t) and t[0].isdigit() for t in text) > 20  # documents match
    monkeypatch.setenv("XPFILT_COMPILED", "1")
    monkeypatch.setattr(scanner, "source_hash", lambda: -1)  # an AOT build of another source
    assert compiled_loop().kind == "jit"
    monkeypatch.setenv("XPFILT_COMPILED", "0")
    assert compiled_loop() is None and FastFilter(QUERIES).stats["engine"] == "python"


def test_spark_executors_build_the_compiled_engine(data):
    # the task every executor runs (xpfilt filter --spark), called here without Spark
    from types import SimpleNamespace

    from xpfilt.scale import filter as spark_filter
    from xpfilt.software.events import load_documents

    lines = (data / "queries" / "nitf-d8-p15-n2000.txt").read_text().splitlines()
    task = spark_filter._FilterTask(SimpleNamespace(value=(lines, None)), "fast", "q", None, None)
    paths = tuple(str(p) for p in load_documents([data / "nitf" / "docs"])[:20])
    _, _, rows, _, _ = task((spark_filter._Batch("k", "files", paths, len(paths)), 0))
    [engine] = spark_filter._ENGINES.values()
    spark_filter._ENGINES.clear()
    assert len(rows) == 20 and all(row["error"] is None for row in rows)
    assert engine.stats["engine"] == "compiled" and engine.stats["compiled_documents"] == 20


def test_the_ahead_of_time_build_is_skipped_on_a_cpu_without_popcnt(monkeypatch, tmp_path):
    from xpfilt.software import scanner
    from xpfilt.software.fast import compiled_loop

    real_open = open

    def cpu(name, text=None):  # /proc/cpuinfo as scanner reads it (no text: unreadable)
        info = tmp_path / name
        if text is not None:
            info.write_text(text)
        monkeypatch.setattr(scanner, "open", lambda path, *a: real_open(info, *a), raising=False)

    old = "processor\t: 0\nflags\t\t: fpu sse sse2 ssse3\n"
    arm = "processor\t: 0\nFeatures\t: fp asimd\n"
    for name, text, runs in (("old", old, False), ("arm", arm, True), ("none", None, True)):
        cpu(name, text)
        assert scanner.cpu_runs_aot() is runs
    # a build for x86-64-v3 (the building CPU had it) on a CPU with POPCNT but no AVX2 or BMI
    v2 = "processor\t: 0\nflags\t\t: fpu sse sse2 ssse3 sse4_1 sse4_2 popcnt\n"
    v3 = "flags\t: popcnt avx avx2 bmi1 bmi2 fma f16c movbe abm xsave\n"
    for level, name, text, runs in (
        ("x86-64-v3", "v2", v2, False),
        ("x86-64-v3", "v3", v3, True),
        ("x86-64-v2", "v2", v2, True),
    ):
        monkeypatch.setattr(scanner, "aot_level", lambda level=level: level)
        cpu(name, text)
        assert scanner.cpu_runs_aot() is runs
        assert scanner.cpu_level() == name.replace("v", "x86-64-v")  # what a build there targets
    monkeypatch.setattr(scanner, "cpu_runs_aot", lambda: False)
    assert compiled_loop().kind == "jit"
