"""The programmable engine: configuration generation and streams, the model against the
reference, safe reconfiguration, and the RTL against the model in the Amaranth simulator."""

import dataclasses
import zlib

import pytest

from xpfilt.compiler.programmable import (
    NIBBLE_ROWS,
    ConfigurationError,
    HardwareSpec,
    cluster_queries,
    configure,
    dictionary_entries,
    dictionary_row,
    dictionary_row_fields,
    dictionary_rows,
    read_stream,
    reconfigure,
)
from xpfilt.engines import filter_batch
from xpfilt.hwspec.contract import Errors
from xpfilt.lang.xpath import load_queries, parse_query
from xpfilt.model.custom import collect_readout, run_documents
from xpfilt.model.programmable import ProgrammableModel, ProgrammableModelEngine, load_configuration
from xpfilt.software.events import load_documents
from xpfilt.software.reference import ReferenceFilter
from xpfilt.software.results import read_expected

from .conftest import expected_cases, shared_cases
from .rtl_compare_programmable import compare_programmable

STRUCTURAL = [c for c in expected_cases() if "pred" not in c[0]]


def queries_of(*texts):
    return [parse_query(t, i + 1) for i, t in enumerate(texts)]


def readout_matches(configuration, bits):
    """Query numbers whose readout bit is set."""
    return {n for n, bit in configuration.readout_bit.items() if bits >> bit & 1}


def reference_numbers(queries, document):
    return {queries[i].number for i in ReferenceFilter(queries).filter(document)}


# --- configuration generation -------------------------------------------------------------


def test_configure_places_queries_on_consecutive_columns():
    spec = HardwareSpec(clusters=2, columns=6, max_tag_len=4)
    config = configure(queries_of("/a/b", "//c/*", "/a//b/c"), spec)
    assert not config.rejected
    assert config.readout_bit == {1: 1, 3: 4, 2: 7}  # in tag order: 1 -> 0..1, 3 -> 2..4
    first, second = config.columns
    assert [c.tag for c in first[:5]] == [b"a", b"b", b"a", b"b", b"c"]
    assert (first[2].first, first[2].first_any, first[2].descendant) == (True, False, True)
    assert (second[0].first_any, second[1].wildcard) == (True, True)
    assert config.tags == (b"a", b"b", b"c")
    assert len(config.stream()) * 8 == spec.stream_bits


def test_the_first_steps_axis_is_in_the_tag_matrix_root_half():
    """Format 7: a cluster's matrix rows are selected by tag index and level 1; the first
    column of a '/' query matches the root only (clear in the first half), of a '//' query any
    element; the other columns match by tag in both halves; two flags per column."""
    spec = HardwareSpec(clusters=1, columns=8, max_tag_len=4, tags=3)
    queries = queries_of("/a/b", "//a", "/*", "//*/b")
    config = configure(queries, spec)
    contents = read_stream(spec, config.stream())
    entries = dictionary_entries(spec, contents.dictionary)
    half, n = spec.matrix_rows // 2, spec.columns
    assert (spec.matrix_rows, spec.column_flag_bits) == (8, 2)
    payload = contents.payloads[0]
    rows = [payload >> (n * i) & (1 << n) - 1 for i in range(spec.matrix_rows)]
    a, b = entries.index("a") + 1, entries.index("b") + 1
    slash_a, any_a, slash_star, any_star = (
        config.readout_bit[q.number] - len(q) + 1 for q in queries
    )  # their first columns
    for row, root in [(rows[a], False), (rows[half + a], True)]:
        assert (row >> slash_a & 1, row >> slash_a + 1 & 1, row >> any_a & 1) == (root, 0, 1)
    assert rows[half + b] >> slash_a + 1 & 1 and rows[b] >> slash_a + 1 & 1
    assert all(
        rows[half + i] >> slash_star & 1
        and not rows[i] >> slash_star & 1
        and rows[i] >> any_star & 1
        for i in range(half)
    )
    assert sorted(text for _, text in cluster_queries(spec, entries, payload)) == sorted(
        ["/a/b", "//a", "/*", "//*/b"]
    )


def test_the_dictionary_holds_each_entry_byte_as_two_nibble_rows():
    """Format 10: per name position, 16 rows by the byte's high nibble, then 16 by its low
    one, ``tags`` bits each; an entry's bit is set in exactly one of each (0 past its end;
    a free entry: 0 everywhere)."""
    spec = HardwareSpec(clusters=1, columns=8, max_tag_len=2, tags=3)
    contents = read_stream(spec, configure(queries_of("/a/bc"), spec).stream())
    assert spec.format_version == 10 and spec.dictionary_bits == NIBBLE_ROWS * 2 * 3
    rows = dictionary_rows(spec, contents.dictionary)
    assert len(rows) == 64
    want = {
        (0, False, 6): 0b011,
        (0, True, 1): 0b001,
        (0, True, 2): 0b010,  # "a", "bc"
        (0, False, 0): 0b100,
        (0, True, 0): 0b100,  # a free entry
        (1, False, 0): 0b101,
        (1, True, 0): 0b101,
        (1, False, 6): 0b010,
        (1, True, 3): 0b010,
    }
    assert {
        (p, low, v): rows[dictionary_row(p, low, v)]
        for p in range(2)
        for low in (False, True)
        for v in range(16)
        if rows[dictionary_row(p, low, v)]
    } == want
    assert dictionary_entries(spec, contents.dictionary) == ["a", "bc", ""]


def test_a_dictionary_row_gives_back_its_fields():
    """dictionary_row_fields inverts dictionary_row over every row of a position range."""
    fields = [(p, low, v) for p in range(3) for low in (False, True) for v in range(16)]
    assert [dictionary_row(*f) for f in fields] == list(range(NIBBLE_ROWS * 3))
    assert [dictionary_row_fields(dictionary_row(*f)) for f in fields] == fields


def test_the_decoder_follows_any_nibble_rows_as_the_model_does():
    """The rows need not spell one name per entry: entry 0 takes 'a' or 'q' (both high
    nibbles) then 'b' or 'c'; entry 1 equals entry 0's 'ab' (a name equal to two entries: the
    OR of their indices); an empty entry (all rows clear) matches nothing, a name longer than
    max_tag_len nothing. RTL and model agree cycle for cycle, and the model's index follows
    the rows."""
    from xpfilt.compiler.programmable import _full_stream

    spec = HardwareSpec(clusters=1, columns=4, max_tag_len=2, max_depth=4, max_name=4, tags=3)
    config = configure(queries_of("//ab", "//qc", "/x"), spec)
    rows = dictionary_rows(spec, config.dictionary_payload)
    for v in (6, 7):  # entry 0 ('ab'): high nibble 6 or 7 at position 0 ...
        rows[dictionary_row(0, False, v)] |= 0b001
    for v in (1, 2):
        rows[dictionary_row(0, True, v)] |= 0b001
    rows[dictionary_row(1, True, 3)] |= 0b001  # ... and 'b' or 'c' at position 1
    stream = _full_stream(
        spec, sum(r << (spec.tags * k) for k, r in enumerate(rows)), config.cluster_payloads
    )
    model = ProgrammableModel(spec)
    load_configuration(model, stream)
    index = model.dictionary.index
    assert [
        index(spec, n) for n in (b"ab", b"ac", b"qb", b"qc", b"aa", b"x", b"xx", b"abc", b"")
    ] == [1, 1, 1, 1 | 2, 0, 3, 0, 0, 0]
    docs = [b"<ab/>", b"<qc/>", b"<x><ab/></x>", b"<ac><abc/></ac>", b"<qb/>"]
    result = compare_programmable(spec, [("config", stream), *docs], seed=5)
    assert result["mismatch"] is None, result["mismatch"]


def test_configure_fits_the_queries_tags_into_the_dictionary():
    spec = HardwareSpec(clusters=2, columns=8, max_tag_len=4, tags=3)
    config = configure(
        queries_of("/a/b", "/c/d", "/a/a/b", "/c//d", "/x/y/z", "/e", "/w/x/y/z"), spec
    )
    assert config.tags == (b"a", b"b", b"e")
    assert config.readout_bit == {3: 2, 1: 4, 6: 5}
    assert config.summary() == (
        "4 queries are not configured:\n"
        "  query 2 (/c/d): no room left in the tag dictionary (3 tags)\n"
        "  query 4 (/c//d): no room left in the tag dictionary (3 tags)\n"
        "  query 5 (/x/y/z): no room left in the tag dictionary (3 tags)\n"
        "  query 7 (/w/x/y/z): 4 distinct tags do not fit the dictionary's 3 tags"
    )
    assert len(config.stream()) * 8 == spec.stream_bits


def test_configure_reports_what_does_not_fit_and_keeps_the_rest():
    spec = HardwareSpec(clusters=1, columns=4, max_tag_len=3)
    config = configure(queries_of("/a/b", "/long/b", "/a[@x=1]", "/a/b/c", "//d"), spec)
    assert config.readout_bit == {1: 1, 5: 2}
    assert config.summary() == (
        "3 queries are not configured:\n"
        "  query 2 (/long/b): tag 'long' is longer than the hardware's max tag length 3\n"
        "  query 3 (/a[@x=1]): value predicates need comparator slots (this hardware has none: "
        "`xpfilt compile --mode programmable --slots N`)\n"
        "  query 4 (/a/b/c): no room left (1 clusters x 4 columns)\n"
        "at least 2 more columns would be needed (the hardware has 4)"
    )
    with pytest.raises(ConfigurationError):
        configure(queries_of("/long"), spec, strict=True)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"columns": 0}, "columns must be at least 1, not 0"),
        ({"columns": 3}, "columns must be even, not 3"),
        ({"max_tag_len": 40}, "max tag length must be at most max name (32), not 40"),
        ({"tags": 0}, "tags must be at least 1, not 0"),
        ({"tags": 256}, "tags must be at most 255, not 256"),
        (
            {"readout_group": 3},
            "readout group must be a power of two dividing the columns (128), not 3",
        ),
        (
            {"columns": 4, "readout_group": 8},
            "readout group must be a power of two dividing the columns (4), not 8",
        ),
        (
            {"readout_group": 2, "slots": 1},
            "readout group must be 1 with closing columns "
            "(comparator slots or a twig width: they set their "
            "match flags on pops), not 2",
        ),
        (
            {"readout_group": 2, "twig_width": 2},
            "readout group must be 1 with closing columns "
            "(comparator slots or a twig width: they set their "
            "match flags on pops), not 2",
        ),
    ],
)
def test_spec_is_validated(kwargs, message):
    with pytest.raises(ValueError) as info:
        HardwareSpec(**kwargs)
    assert str(info.value) == message


def test_fingerprint_changes_with_every_parameter():
    base = HardwareSpec()
    others = [
        HardwareSpec(clusters=2),
        HardwareSpec(columns=64),
        HardwareSpec(max_tag_len=8),
        HardwareSpec(max_depth=12),
        HardwareSpec(max_name=24),
        HardwareSpec(tags=16),
        HardwareSpec(readout_group=4),
    ]
    assert len({base.fingerprint, *(o.fingerprint for o in others)}) == 8


@pytest.mark.parametrize("group", [2, 4, 8])
def test_readout_groups_hold_one_readout_column_each(group):
    """With readout groups, every placed path's readout column is alone in its group of
    ``group`` columns (short queries skip columns), its readout bit is that group's, and the
    stream's answer select names it; reconfigure keeps that for the queries it adds."""
    spec = HardwareSpec(clusters=2, columns=16, max_tag_len=4, tags=16, readout_group=group)
    texts = ["/a", "//b", "/a/b", "/c", "/a/b/c/d/e", "//d", "/e//f", "/*"]
    config = configure(queries_of(*texts), spec)
    assert len(config.readout_bit) >= min(5, spec.readout_width)
    columns = {}  # readout column (of the engine) -> query
    for k, cluster in enumerate(config.columns):
        for j, c in enumerate(cluster):
            if c.answer:
                columns[k * spec.columns + j] = c
    groups = [col // group for col in columns]
    assert len(set(groups)) == len(groups)
    assert sorted(config.readout_bit.values()) == sorted(groups)
    contents = read_stream(spec, config.stream())
    selects = contents.payloads[0] >> (
        spec.matrix_rows * spec.columns + spec.column_flag_bits * spec.columns
    )
    bits = spec.group_select_bits
    for col in columns:
        if col < spec.columns:
            assert selects >> (bits * (col // group)) & (group - 1) == col % group
    entries = dictionary_entries(spec, contents.dictionary)
    read_back = sorted(
        text for payload in contents.payloads for _, text in cluster_queries(spec, entries, payload)
    )
    assert read_back == sorted(str(q) for q in queries_of(*texts) if q.number in config.readout_bit)
    # a full cluster whose answer selects are 2, 3, 3, 3 at N = 4
    odd = queries_of("/a/b/c", "/d/e/f/g/h", "/i/j/k/l", "/m/n/o/p")
    odd_contents = read_stream(spec, configure(odd, spec).stream())
    assert (
        sorted(
            text
            for payload in odd_contents.payloads
            for _, text in cluster_queries(
                spec, dictionary_entries(spec, odd_contents.dictionary), payload
            )
        )
        == sorted(str(q) for q in odd)
        or group == 8
    )
    update = reconfigure(queries_of(*texts, "/g", "//h/i"), config.stream(), spec)
    kept = {n: b for n, b in update.readout_bit.items() if n in config.readout_bit}
    assert kept == config.readout_bit
    assert len(set(update.readout_bit.values())) == len(update.readout_bit)


# --- the model ------------------------------------------------------------------------------


@pytest.mark.parametrize("name, queries_path, folder, tsv", shared_cases(STRUCTURAL))
def test_model_reproduces_shared_expected(name, queries_path, folder, tsv):
    queries = load_queries(queries_path).queries
    spec = HardwareSpec(clusters=24, columns=512, max_tag_len=24, tags=128)
    engine = ProgrammableModelEngine(queries, spec)
    assert not engine.configuration.rejected
    results = {r.name: r.matches for r in filter_batch(engine, load_documents([folder]))}
    assert results == read_expected(tsv)


SPEC = HardwareSpec(clusters=2, columns=8, max_tag_len=3, max_depth=6, max_name=8, tags=4)
SET_A = queries_of("/a/b", "//b", "/a//c", "/*/b/c")
SET_B = queries_of("//c", "/a/*/c", "//x/c")
DOCS = [b"<a><b><c/></b></a>", b"<a><x><c/></x></a>", b"<b/>"]


def corrupt(stream: bytes, bit: int) -> bytes:
    data = bytearray(stream)
    data[bit // 8] ^= 1 << (bit % 8)
    return bytes(data)


def test_reconfiguration_between_documents_and_rejected_streams():
    model = ProgrammableModel(SPEC)
    config_a, config_b = configure(SET_A, SPEC), configure(SET_B, SPEC)
    # never configured: nothing matches
    assert all(r.bits == 0 for r in run_documents(model, DOCS))
    load_configuration(model, config_a.stream())
    assert model.status == {"generation": 1, "loaded": 1, "rejected": 0, "pending": 0}
    for doc, r in zip(DOCS, run_documents(model, DOCS)):
        assert readout_matches(config_a, r.bits) == reference_numbers(SET_A, doc)
    good_b = config_b.stream()
    bad_streams = [
        good_b[:-1],
        good_b[:40],
        corrupt(good_b, 200),
        corrupt(good_b, 30),
        good_b + b"\x00",
        configure(SET_B, HardwareSpec(clusters=2, columns=8, max_tag_len=4)).stream(),
    ]
    for bad in bad_streams:
        load_configuration(model, bad)
        assert model.status["rejected"] == 1 and model.status["generation"] == 1
        for doc, r in zip(DOCS, run_documents(model, DOCS)):  # still configuration A
            assert readout_matches(config_a, r.bits) == reference_numbers(SET_A, doc)
    load_configuration(model, good_b)
    assert model.status == {"generation": 2, "loaded": 1, "rejected": 0, "pending": 0}
    for doc, r in zip(DOCS, run_documents(model, DOCS)):
        assert readout_matches(config_b, r.bits) == reference_numbers(SET_B, doc)


# --- delta streams (issue 16) ----------------------------------------------------------------


def answers(model, configuration_bits, queries, docs):
    """Per document: (what the model answers, what the reference answers) as query numbers."""
    return [
        (
            {n for n, bit in configuration_bits.items() if r.bits >> bit & 1},
            reference_numbers(queries, doc),
        )
        for doc, r in zip(docs, run_documents(model, docs))
    ]


def test_read_stream_round_trips_and_names_what_is_wrong():
    config = configure(SET_A, SPEC)
    stream = config.stream()
    contents = read_stream(SPEC, stream)
    assert contents.full and contents.new_id == config.id and contents.base_id == 0
    entries = dictionary_entries(SPEC, contents.dictionary)
    assert [[text for _, text in cluster_queries(SPEC, entries, p)] for p in contents.payloads] == [
        ["/*/b/c", "/a/b", "/a//c", "//b"],
        [],
    ]
    old_version = bytearray(stream)
    old_version[2] = 2
    old_version[-4:] = zlib.crc32(bytes(old_version[:-4])).to_bytes(4, "little")
    foreign = configure(SET_A, HardwareSpec(clusters=2, columns=8, max_tag_len=4)).stream()
    for data, message in [
        (stream[:10], "s must be a configuration stream of at least 23 bytes, not 10"),
        (
            b"<a>" + stream[3:],
            "s must start with the magic 0x5846, not 0x613c: not a configuration stream",
        ),
        (
            bytes(old_version),
            "s must be configuration stream format 10, not 2: regenerate "
            "it with `xpfilt configure`",
        ),
        (
            foreign,
            f"s must be generated for this hardware (fingerprint "
            f"{SPEC.fingerprint:08x}), not "
            f"{int.from_bytes(foreign[3:7], 'little'):08x}",
        ),
        (corrupt(stream, 200), "s must end with the CRC-32 of its contents: corrupt"),
    ]:
        with pytest.raises(ValueError) as info:
            read_stream(SPEC, data, "s")
        assert str(info.value) == message


def test_reconfigure_moves_nothing_that_stays_and_rewrites_only_changed_clusters():
    spec = HardwareSpec(clusters=3, columns=8, max_tag_len=3, max_depth=6, max_name=8, tags=6)
    before = configure(queries_of("/a/b", "//b", "/a//c", "/*/b/c", "//x/c", "/x/y"), spec)
    # the same paths renumbered, one removed (//b), one added (/y/z), one refused
    after = queries_of("/x/y", "/a/b", "/a//c", "/y/z", "/*/b/c", "//x/c", "/a[@k=1]")
    update = reconfigure(after, before.stream(), spec)
    kept = {
        q.number: before.readout_bit[n]
        for q in after
        for n, old in enumerate(["/a/b", "//b", "/a//c", "/*/b/c", "//x/c", "/x/y"], 1)
        if str(q) == old
    }
    assert {n: update.readout_bit[n] for n in kept} == kept
    assert set(update.readout_bit) == {1, 2, 3, 4, 5, 6}
    assert update.rejected == (
        (
            7,
            "query 7 (/a[@k=1]): value predicates need comparator slots "
            "(this hardware has none: `xpfilt compile --mode "
            "programmable --slots N`)",
        ),
    )
    delta = read_stream(spec, update.delta())
    assert delta.base_id == before.id and delta.new_id == read_stream(spec, update.stream()).new_id
    assert [k for k, p in enumerate(delta.payloads) if p is not None] == list(update.changed)
    assert update.dictionary_changed and delta.dictionary is not None  # a new tag, z
    assert len(update.changed) < spec.clusters
    assert len(update.delta()) < len(update.stream())
    # the full stream of the update is what configure() of the same placement would load:
    # the model loaded with (before, then the delta) answers as the reference
    model = ProgrammableModel(spec)
    load_configuration(model, before.stream())
    load_configuration(model, update.delta())
    assert model.status == {"generation": 2, "loaded": 1, "rejected": 0, "pending": 0}
    docs = [b"<a><b><c/></b></a>", b"<x><y/><c/></x>", b"<y><z/></y>", b"<b/>"]
    for got, want in answers(model, update.readout_bit, after[:6], docs):
        assert got == want
    full = ProgrammableModel(spec)
    load_configuration(full, update.stream())
    assert [(c.matrix[c.bank], c.first, c.descendant) for c in model.clusters] == [
        (c.matrix[c.bank], c.first, c.descendant) for c in full.clusters
    ]
    assert (
        model.dictionary.rows[model.dictionary.bank] == full.dictionary.rows[full.dictionary.bank]
    )


def test_a_delta_is_refused_unless_its_base_is_the_active_configuration():
    config_a, config_b = configure(SET_A, SPEC), configure(SET_B, SPEC)
    on_b = reconfigure(SET_B[:2], config_b.stream(), SPEC)  # a delta whose base is B
    model = ProgrammableModel(SPEC)
    load_configuration(model, on_b.delta())  # nothing loaded yet
    assert model.status == {"generation": 0, "loaded": 0, "rejected": 1, "pending": 0}
    load_configuration(model, config_a.stream())
    load_configuration(model, on_b.delta())  # A is loaded, not B
    assert model.status == {"generation": 1, "loaded": 1, "rejected": 1, "pending": 0}
    for got, want in answers(model, config_a.readout_bit, SET_A, DOCS):
        assert got == want
    with pytest.raises(ValueError) as info:
        reconfigure(SET_A, on_b.delta(), SPEC, what="old.bin")
    assert str(info.value) == (
        "old.bin must be a full configuration stream (`xpfilt "
        "configure` writes one beside every delta), not a delta"
    )


def test_configure_and_reconfigure_are_one_allocator_with_one_result_type():
    """configure() and reconfigure() return a Configuration; a reconfiguration is configure()
    from the previous stream, whose columns are what its full stream holds; without a base
    the delta is the full stream."""
    spec = HardwareSpec(clusters=3, columns=8, max_tag_len=3, max_depth=6, max_name=8, tags=6)
    before = configure(queries_of("/a/b", "//b", "/a//c", "/*/b/c", "//x/c", "/x/y"), spec)
    assert before.delta() == before.stream() and before.changed == (0, 1, 2)
    after = queries_of("/x/y", "/a/b", "/y/z", "/*/b/c")
    update = reconfigure(after, before.stream(), spec)
    same = configure(after, spec, previous=before.stream())
    assert type(update) is type(same) is type(before)
    assert update == same and update.delta() == same.delta() and update.stream() == same.stream()
    # every cluster's columns are its payload: rebuilt without a base, the same stream
    rebuilt = dataclasses.replace(update, base=None, changed=(), dictionary_changed=True)
    assert rebuilt.stream() == update.stream() and rebuilt.delta() == update.stream()


def test_reconfigure_reports_what_has_no_room_and_keeps_the_rest():
    spec = HardwareSpec(clusters=1, columns=6, max_tag_len=3, tags=4)
    before = configure(queries_of("/a/b", "/c/d"), spec)
    assert before.readout_bit == {1: 1, 2: 3}
    update = reconfigure(queries_of("/a/b", "/c/d", "/a/b/c", "/d"), before.stream(), spec)
    assert update.readout_bit == {1: 1, 2: 3, 4: 4}
    assert update.summary() == (
        "1 queries are not configured:\n"
        "  query 3 (/a/b/c): no room left (1 clusters x 6 columns)\n"
        "at least 2 more columns would be needed (the hardware has 6)"
    )


def test_reconfigure_gives_a_new_tag_the_entry_of_one_no_query_names_any_more():
    spec = HardwareSpec(clusters=2, columns=4, max_tag_len=2, max_depth=4, max_name=4, tags=2)
    before = configure(queries_of("/a", "//b"), spec)
    update = reconfigure(queries_of("/a", "/c//a"), before.stream(), spec)
    assert not update.rejected and update.dictionary_changed
    assert dictionary_entries(spec, read_stream(spec, update.stream()).dictionary) == ["a", "c"]
    model = ProgrammableModel(spec)
    load_configuration(model, before.stream())
    load_configuration(model, update.delta())
    docs = [b"<a/>", b"<c><x><a/></x></c>", b"<b/>", b"<c><b/></c>"]
    for got, want in answers(model, update.readout_bit, queries_of("/a", "/c//a"), docs):
        assert got == want


def test_reconfigure_never_gives_away_an_entry_the_new_query_itself_names():
    """A new query naming a tag of the dictionary that no kept query uses any more must keep
    that entry (the old code handed it to the query's own new tag: KeyError on b'a')."""
    spec = HardwareSpec(clusters=1, columns=4, max_tag_len=2, max_depth=4, max_name=4, tags=2)
    before = configure(queries_of("/a/b"), spec)
    update = reconfigure(queries_of("/a/c"), before.stream(), spec)
    assert not update.rejected and update.readout_bit == {1: 1}
    assert dictionary_entries(spec, read_stream(spec, update.stream()).dictionary) == ["a", "c"]
    model = ProgrammableModel(spec)
    load_configuration(model, update.stream())
    docs = [b"<a><c/></a>", b"<a><b/></a>"]
    for got, want in answers(model, update.readout_bit, queries_of("/a/c"), docs):
        assert got == want


def test_reconfigure_never_gives_away_a_slot_the_new_query_itself_tests():
    spec = HardwareSpec(clusters=1, columns=6, max_tag_len=2, max_depth=4, max_name=4, slots=2)
    before = configure(queries_of("/a[@x=1]", "/c[@z=3]"), spec)
    update = reconfigure(queries_of("/a[@x=1]/b[@y=2]"), before.stream(), spec)
    assert not update.rejected and update.readout_bit == {1: 1}
    model = ProgrammableModel(spec)
    load_configuration(model, update.stream())
    docs = [b'<a x="1"><b y="2"/></a>', b'<a x="2"><b y="2"/></a>', b'<a x="1"><b y="1"/></a>']
    for got, want in answers(model, update.readout_bit, queries_of("/a[@x=1]/b[@y=2]"), docs):
        assert got == want


# --- the RTL ----------------------------------------------------------------------------------


def test_rtl_equals_model_through_loads_rejections_and_documents():
    config_a, config_b = configure(SET_A, SPEC), configure(SET_B, SPEC)
    items = [
        DOCS[0],
        ("config", config_a.stream()),
        *DOCS,
        ("config", corrupt(config_b.stream(), 100)),
        DOCS[1],
        ("config", config_b.stream()[:-2]),
        DOCS[0],
        ("config", config_b.stream()),
        *DOCS,
        b"<a><b></a>",
        DOCS[1],
    ]
    result = compare_programmable(SPEC, items, seed=4, p_valid=0.85, p_ready=0.8)
    assert result["mismatch"] is None, result["mismatch"]
    readouts = collect_readout(result["beats"], SPEC.clusters * SPEC.columns)
    docs = [i for i in items if isinstance(i, bytes)]
    assert len(readouts) == len(docs)
    configs = [
        None,
        config_a,
        config_a,
        config_a,
        config_a,
        config_a,
        config_b,
        config_b,
        config_b,
        config_b,
        config_b,
    ]
    sets = {id(config_a): SET_A, id(config_b): SET_B}
    for doc, readout, config in zip(docs, readouts, configs):
        if config is None:
            assert readout.bits == 0
        elif doc == b"<a><b></a>":
            assert readout.errors
        else:
            assert readout_matches(config, readout.bits) == reference_numbers(
                sets[id(config)], doc
            ), doc
    assert [s["generation"] for s in result["status"]][-1] == 2


def test_rtl_flags_an_entity_with_markup_as_the_model_does():
    """Issue 35 #7: the programmable engine's front end flags a reference to an entity it
    cannot decide (``entity``), in the RTL as in the model, and answers the documents around
    it."""
    config = configure(SET_A, SPEC)
    entity = b'<!DOCTYPE a [<!ENTITY m "<b><c/></b>">]><a>&m;</a>'
    decided = b"<a>&amp;&#60;<b><c/></b></a>"
    items = [("config", config.stream()), DOCS[0], entity, decided, DOCS[1]]
    result = compare_programmable(SPEC, items, seed=2, p_valid=0.8, p_ready=0.7)
    assert result["mismatch"] is None, result["mismatch"]
    readouts = collect_readout(result["beats"], SPEC.clusters * SPEC.columns)
    docs = [i for i in items if isinstance(i, bytes)]
    assert [r.errors for r in readouts] == [0, Errors.ENTITY, 0, 0]
    for doc, readout in zip(docs, readouts):
        if not readout.errors:
            assert readout_matches(config, readout.bits) == reference_numbers(SET_A, doc), doc


def model_state(model):
    d = model.dictionary
    return (
        [(c.bank, c.matrix, c.shift, c.staged, c.first, c.descendant) for c in model.clusters],
        (d.bank, d.rows, d.shift),
        model.status,
        model.header,
        model.received,
        model.cfg_count,
        model.state,
        model.payload_count,
        model.active_id,
    )


def test_preload_leaves_the_state_a_real_load_leaves():
    from xpfilt.model.programmable import preload_configuration

    for queries in (SET_A, SET_B):
        loaded, preloaded = ProgrammableModel(SPEC), ProgrammableModel(SPEC)
        configuration = configure(queries, SPEC)
        load_configuration(loaded, configuration.stream())
        preload_configuration(preloaded, configuration)
        assert model_state(loaded) == model_state(preloaded)


def test_a_stream_completing_mid_document_commits_at_the_boundary():
    """The configuration finishes while a long document streams: that document is filtered
    entirely with the old configuration, the next one entirely with the new."""
    config_a, config_b = configure(SET_A, SPEC), configure(SET_B, SPEC)
    long_doc = b"<a>" + b"<x><c/></x><b><c/></b>" * 60 + b"</a>"
    items = [
        ("config", config_a.stream()),
        DOCS[0],
        ("config+doc", config_b.stream(), long_doc),
        DOCS[1],
    ]
    result = compare_programmable(SPEC, items, seed=9, p_valid=0.9, p_ready=0.9)
    assert result["mismatch"] is None, result["mismatch"]
    readouts = collect_readout(result["beats"], SPEC.clusters * SPEC.columns)
    assert len(config_b.stream()) * 8 < len(long_doc)  # the stream ends mid-document
    assert readout_matches(config_a, readouts[1].bits) == reference_numbers(SET_A, long_doc)
    assert readout_matches(config_b, readouts[2].bits) == reference_numbers(SET_B, DOCS[1])


def answer_alone(configuration, document: bytes, spec=SPEC) -> int:
    """The readout bits of ``document`` on a model with only ``configuration`` loaded."""
    model = ProgrammableModel(spec)
    load_configuration(model, configuration.stream())
    return run_documents(model, [document])[0].bits


def switch_in_flight(
    config_a, config_b, document: bytes, lead: int, after: bytes, spec=SPEC
) -> list[int]:
    """RTL = model with A loaded, then B's stream with ``document`` offered from B's ``lead``-th
    bit on (valid and ready always 1), then ``after``: the two documents' readout bits."""
    stream_b = config_b.stream()
    items = [("config", config_a.stream()), ("config+doc", stream_b, document, lead), after]
    result = compare_programmable(spec, items, p_valid=1.0, p_ready=1.0)
    assert result["mismatch"] is None, result["mismatch"]
    return [r.bits for r in collect_readout(result["beats"], spec.readout_width)]


@pytest.mark.parametrize("tail", [1, 2, 4, 5, 6, 8, 12])
def test_a_commit_never_mixes_two_configurations_in_one_document(tail):
    """Issue 11, defect 2: the stream's last ``tail`` bits go in with the document ``<a/>``
    (valid and ready always 1), so it completes while that document is in flight; the document
    is answered wholly by the old configuration (A's tag entries with B's flags would set both
    columns), the next wholly by the new one."""
    config_a = configure(queries_of("/a/a"), SPEC)
    config_b = configure(queries_of("/c", "//d"), SPEC)
    expected_a = answer_alone(config_a, b"<a/>")
    bits = switch_in_flight(config_a, config_b, b"<a/>", len(config_b.stream()) * 8 - tail, b"<d/>")
    assert expected_a == 0b01 and bits[0] == expected_a
    assert readout_matches(config_b, bits[1]) == {2}


@pytest.mark.parametrize(
    "spec",
    [SPEC, HardwareSpec(clusters=17, columns=2, max_tag_len=3, max_depth=6, max_name=8, tags=4)],
    ids=["2-clusters", "17-clusters"],
)
@pytest.mark.parametrize("lead_back, answered_by", [(0, "new"), (1, "old")])
def test_the_first_document_offered_after_the_last_bit_gets_the_new_configuration(
    spec, lead_back, answered_by
):
    """``<d/>`` is offered from the cycle after the stream's last bit is taken (``lead_back``
    = 0) or from that bit's cycle (1), valid and ready always 1: the loader checks that bit a
    cycle later, in its input register, and the input holds meanwhile, so the document is
    answered wholly by the new configuration in the first case, by the old one in the second;
    with 17 clusters, the loader's port reaches them through a three-level tree."""
    config_a = configure(queries_of("/a/d"), spec)  # the same tags, other columns
    config_b = configure(queries_of("//d", "/a"), spec)
    assert dictionary_entries(
        spec, read_stream(spec, config_a.stream()).dictionary
    ) == dictionary_entries(spec, read_stream(spec, config_b.stream()).dictionary)
    answers = {
        "old": answer_alone(config_a, b"<d/>", spec),
        "new": answer_alone(config_b, b"<d/>", spec),
    }
    assert answers["old"] != answers["new"]
    bits = switch_in_flight(
        config_a, config_b, b"<d/>", len(config_b.stream()) * 8 - lead_back, b"<d/>", spec
    )
    assert bits == [answers[answered_by], answers["new"]]


def test_rtl_equals_model_through_deltas_mid_document_truncated_and_stale():
    """Issue 16: a delta completing while a long document streams commits at its end (that
    document wholly on the old configuration); a delta cut short mid-document, and one made
    for another configuration, are refused and the old configuration stays; valid/ready
    random. RTL = model every cycle, answers = the reference of the active configuration."""
    spec = HardwareSpec(clusters=3, columns=8, max_tag_len=3, max_depth=6, max_name=8, tags=6)
    set_a = queries_of("/a/b", "//b", "/a//c", "/*/b/c", "//x/c")
    config_a = configure(set_a, spec)
    set_b = queries_of("/a/b", "/a//c", "/y/z", "/*/b/c", "//x/c")
    update = reconfigure(set_b, config_a.stream(), spec)
    assert 0 < len(update.changed) < spec.clusters
    stale = reconfigure(set_a, configure(set_b, spec).stream(), spec).delta()
    long_doc = b"<a>" + b"<x><c/></x><b><c/></b><y><z/></y>" * 40 + b"</a>"
    assert len(update.delta()) * 8 < len(long_doc)  # (format 10's dictionary: 1,056 bits)
    items = [
        ("config", config_a.stream()),
        DOCS[0],
        ("config+doc", update.delta()[:-5], long_doc),  # cut short: refused
        ("config", stale),
        b"<y><z/></y>",  # another base: refused
        ("config+doc", update.delta(), long_doc),  # commits after it
        b"<y><z/></y>",
        DOCS[0],
    ]
    result = compare_programmable(spec, items, seed=5, p_valid=0.85, p_ready=0.8)
    assert result["mismatch"] is None, result["mismatch"]
    readouts = collect_readout(result["beats"], spec.readout_width)
    docs = [DOCS[0], long_doc, b"<y><z/></y>", long_doc, b"<y><z/></y>", DOCS[0]]
    bits = [config_a.readout_bit] * 4 + [update.readout_bit] * 2
    sets = [set_a] * 4 + [set_b] * 2
    assert len(readouts) == len(docs)
    for doc, readout, where, queries in zip(docs, readouts, bits, sets):
        assert {n for n, b in where.items() if readout.bits >> b & 1} == reference_numbers(
            [q for q in queries if q.number in where], doc
        ), doc
    assert [s["rejected"] for s in result["status"]] == [0, 0, 1, 1, 1, 0, 0, 0, 0]
    assert result["status"][-1]["generation"] == 2


def edge_case_items(spec: HardwareSpec):
    """Queries and documents sized to ``spec``: one-letter tags and tags of exactly
    ``max_tag_len`` letters, documents at, and one beyond, the depth and name limits."""
    long_tag = "t" * spec.max_tag_len
    texts = ["/a", "//b", f"//{long_tag}", "/a/b", "/*//a", f"/a//{long_tag}"]
    queries = queries_of(*texts)
    docs = [
        b"<a/>",
        b"<b/>",
        f"<{long_tag}/>".encode(),
        b"<x/>",
        b"<a>" * spec.max_depth + b"</a>" * spec.max_depth,
        b"<a>" * (spec.max_depth + 1) + b"</a>" * (spec.max_depth + 1),
        b"<a>" + b"<b>" * (spec.max_depth - 1) + b"</b>" * (spec.max_depth - 1) + b"</a>",
        f"<{long_tag}t/>".encode(),
        ("<" + "n" * (spec.max_name + 1) + "/>").encode(),
    ]
    if spec.max_depth > 1:
        docs.append(f"<a><{long_tag}/></a>".encode())
    return queries, docs


@pytest.mark.parametrize(
    "spec",
    [
        HardwareSpec(clusters=1, columns=2, max_tag_len=1, max_depth=1, max_name=1, tags=1),
        HardwareSpec(clusters=1, columns=2, max_tag_len=1, max_depth=4, max_name=4, tags=2),
        HardwareSpec(clusters=2, columns=4, max_tag_len=2, max_depth=2, max_name=2, tags=3),
        HardwareSpec(clusters=3, columns=6, max_tag_len=3, max_depth=3, max_name=5, tags=5),
        HardwareSpec(clusters=2, columns=8, max_tag_len=4, max_depth=8, max_name=8, tags=8),
        pytest.param(  # the largest: ~8 s per readout, in make test-rtl
            HardwareSpec(
                clusters=1, columns=16, max_tag_len=32, max_depth=16, max_name=32, tags=16
            ),
            marks=pytest.mark.rtl,
        ),
        HardwareSpec(
            clusters=2, columns=8, max_tag_len=4, max_depth=8, max_name=8, tags=8, readout_group=2
        ),
        HardwareSpec(
            clusters=3, columns=16, max_tag_len=3, max_depth=4, max_name=5, tags=5, readout_group=4
        ),
        HardwareSpec(
            clusters=1, columns=32, max_tag_len=2, max_depth=3, max_name=2, tags=3, readout_group=8
        ),
    ],
    ids=lambda s: (
        f"k{s.clusters}-c{s.columns}-t{s.max_tag_len}-d{s.max_depth}-n{s.max_name}"
        f"-g{s.tags}" + (f"-r{s.readout_group}" if s.readout_group > 1 else "")
    ),
)
@pytest.mark.parametrize("readout", ["serial", "sparse"])
def test_rtl_equals_model_and_reference_at_every_parameter_edge(spec, readout):
    """Issue 11, defect 3 (``max_tag_len`` 1 never matched in the RTL): every parameter at 1,
    at powers of two, at odd sizes and at its maximum, with either readout."""
    from dataclasses import replace

    spec = replace(spec, readout=readout)
    queries, docs = edge_case_items(spec)
    config = configure(queries, spec)
    result = compare_programmable(
        spec, [("config", config.stream()), *docs], seed=2, p_valid=0.9, p_ready=0.9
    )
    assert result["mismatch"] is None, result["mismatch"]
    readouts = collect_readout(result["beats"], spec.readout_width)
    assert len(readouts) == len(docs)
    placed = [q for q in queries if q.number in config.readout_bit]
    answered = 0
    for doc, readout in zip(docs, readouts):
        if not readout.errors:
            answered += 1
            assert readout_matches(config, readout.bits) == reference_numbers(placed, doc), doc
    assert answered >= 4 and any(r.bits for r in readouts)


def test_rtl_equals_model_with_entries_in_several_decoder_groups_and_a_deep_tree():
    """The tag decoder reads its entries in groups (``DECODER_GROUP``), and 5 clusters take
    the events and the index through a two-level distribution tree: names of every group
    still reach the right columns, cycle for cycle with the model."""
    from xpfilt.hdl.programmable import DECODER_GROUP

    tags = 40
    assert tags > 2 * DECODER_GROUP
    spec = HardwareSpec(clusters=5, columns=10, max_tag_len=3, max_depth=4, max_name=6, tags=tags)
    queries = queries_of(*(f"//n{i}" for i in range(tags - 1)), "/n1/n39", "/*/n38")
    config = configure(queries, spec)
    assert len(config.readout_bit) == len(queries)
    docs = [
        b"<n1><n39/><n38/></n1>",
        b"<n0><n33/><n2/></n0>",
        b"<n38><n38/></n38>",
        b"<n4/>",
        b"<x><n37/><n3/><n31/><n32/></x>",
    ]
    result = compare_programmable(spec, [("config", config.stream()), *docs], seed=3)
    assert result["mismatch"] is None, result["mismatch"]
    readouts = collect_readout(result["beats"], spec.readout_width)
    assert [readout_matches(config, r.bits) for r in readouts] == [
        reference_numbers(queries, doc) for doc in docs
    ]


@pytest.mark.parametrize("readout", ["serial", "sparse"])
@pytest.mark.parametrize("p", [1.0, 0.6])
def test_readout_groups_answer_back_to_back_short_documents(readout, p):
    """A readout group's flag takes its answer column a cycle after the push (a register
    between the 4:1 multiplexer and the flag): 1-3 byte documents back to back (a push, its
    pop and the capture as close as they come), valid and ready always 1 or random, still
    answer as the model and the reference, every document."""
    spec = HardwareSpec(
        clusters=2,
        columns=4,
        max_tag_len=1,
        max_depth=2,
        max_name=2,
        tags=3,
        readout_group=2,
        readout=readout,
    )
    queries = queries_of("/a", "//b", "/*", "/a/b")
    config = configure(queries, spec)
    assert len(config.readout_bit) == 4
    docs = [
        b"<a/>",
        b"<b/>",
        b"<a/>",
        b"<c/>",
        b"<a>",
        b"<",
        b"<a><b/></a>",
        b"<b/>",
        b"<a/>",
        b"<a><a/></a>",
        b"<b/>",
        b"x",
        b"<a/>",
    ]
    result = compare_programmable(
        spec, [("config", config.stream()), *docs], seed=11, p_valid=p, p_ready=p
    )
    assert result["mismatch"] is None, result["mismatch"]
    readouts = collect_readout(result["beats"], spec.readout_width)
    assert len(readouts) == len(docs)
    for doc, r in zip(docs, readouts):
        if not r.errors:
            assert readout_matches(config, r.bits) == reference_numbers(queries, doc), doc
