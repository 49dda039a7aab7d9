"""Names with a colon (issue 11 #6): one rule for every engine. A name is an XML QName as written
in the document (``prefix:local``, at most one colon, neither part empty) and matches literally;
anything else is a query error with its line, never an lxml exception."""

import pytest
from click.testing import CliRunner

from xpfilt.cli import main
from xpfilt.engines import filter_batch, make_engine
from xpfilt.lang.xpath import XPathSyntaxError, load_queries, parse_query
from xpfilt.software.events import Document


@pytest.mark.parametrize(
    "text, message",
    [
        ("/:a", "query '/:a', column 2: expected an element name or '*', not ':'"),
        (
            "//a:b:c",
            "query '//a:b:c', column 6: expected '/', '//', '[', 'and', 'or', a comparison "
            "or the end of the query (a name has at most one ':'), not ':'",
        ),
        (
            "/a:",
            "query '/a:', column 4: expected a local name after 'a:', not the end of the query",
        ),
        ("/a:/b", "query '/a:/b', column 4: expected a local name after 'a:', not '/'"),
        ("/a[@:x=1]", "query '/a[@:x=1]', column 5: expected an attribute name, not ':'"),
        (
            "/a[@x:y:z=1]",
            "query '/a[@x:y:z=1]', column 8: expected a comparison operator "
            "(=, !=, <, <=, >, >=) or ']' (a name has at most one ':'), not ':'",
        ),
    ],
)
def test_names_with_a_bad_colon_are_rejected(text, message):
    with pytest.raises(XPathSyntaxError) as info:
        parse_query(text)
    assert str(info.value) == message


@pytest.mark.parametrize("text", ["/x:a", "//x:a/y:b", "/x:a[@p:q='1']", "/x.y:a-b"])
def test_prefixed_names_parse(text):
    assert str(parse_query(text)) == text


DOC = Document("ns.xml", b'<x:a xmlns:x="urn:x" xmlns:p="urn:p"><y p:q="1"/><a/></x:a>')


@pytest.mark.parametrize("engine", ["reference", "lxml", "model"])
def test_prefixed_names_match_literally_in_every_engine(engine):
    queries = load_queries(["/x:a", "/a", "//x:a/y", "/*/a", "//y[@p:q='1']", "//p:y"]).queries
    if engine == "model":
        queries = [q for q in queries if q.is_structural]
    [result] = filter_batch(make_engine(engine, queries), [DOC])
    want = (1, 3, 4, 5) if engine != "model" else (1, 3, 4)
    assert (result.matches, result.error) == (want, None)


def test_lxml_filter_reports_bad_names_and_answers_the_rest(tmp_path):
    (tmp_path / "q.txt").write_text("/:a\n//a:b:c\n/x:a\n//a\n")
    (tmp_path / "d.xml").write_bytes(DOC.data)
    result = CliRunner().invoke(
        main, ["filter", "-e", "lxml", "-q", str(tmp_path / "q.txt"), str(tmp_path / "d.xml")]
    )
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.stdout == "d.xml\t3 4\n"
    assert (
        f"xpfilt: {tmp_path / 'q.txt'}: line 1: skipped: query 1 '/:a', column 2" in result.stderr
    )
    assert (
        f"xpfilt: {tmp_path / 'q.txt'}: line 2: skipped: query 2 '//a:b:c', column 6"
        in result.stderr
    )
