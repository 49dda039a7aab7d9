"""The generated Verilog in real simulators (cocotb + Verilator, cocotb + Icarus), every cycle
against the cycle-accurate model and every document against the reference filter.

The fast part builds one small multi-cluster design (cached in ``build/sim`` by a hash of plan and
Verilog, so only the first run pays the Verilator build). ``@pytest.mark.regress`` runs (``make
regress``) take the shared query sets and all shared documents.
"""

from __future__ import annotations

import shutil
from dataclasses import replace

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from xpfilt.cli import main
from xpfilt.compiler.custom import CompileOptions, compile_queries
from xpfilt.compiler.programmable import HardwareSpec
from xpfilt.hdl.frontend import Errors
from xpfilt.lang.xpath import load_queries, parse_query
from xpfilt.model.custom import Beat, EngineModel
from xpfilt.paths import shared_data
from xpfilt.sim.checker import (
    Trace,
    byte_payload,
    compare_with_model,
    decode_beat,
    encode_beat,
    expectation,
    reference_for,
)
from xpfilt.software.events import Document, load_documents
from xpfilt.software.reference import ReferenceFilter
from xpfilt.software.results import read_expected
from xpfilt.verify.regress import RegressionConfig, run_regression

from .conftest import examples, expected_cases
from .strategies import documents as random_documents

DATA = shared_data()

QUERY_TEXTS = [
    "/a/b",
    "//b",
    "/a//c",
    "/*/b/c",
    "//c/*",
    "/a/a//b",
    "/nitf/head/*",
    "//meta",
    "/nitf//head/meta",
    "/*/*/pubdata",
    "//head//pubdata",
    "/nitf/body//p",
]
OPTIONS = CompileOptions(cluster_size=4, max_depth=8)  # 12 queries: 3 clusters

GOOD = {
    "doctype.xml": b'<?xml version="1.0"?>\n<!DOCTYPE a [<!ENTITY e "x>y">]>\n'
    b"<a k=\"v>/\" j='q'><b/><!-- <c> --><![CDATA[<b>]]]><c>&amp;<d/></c><?pi ?></a>",
    "recursive.xml": b"<a><a><b><a><b/></a></b></a></a>",
    "spaces-in-tags.xml": b"<a>\n<b\n>t</b\n></a>",
    "tiny.xml": b"<a/>",
    "after-bad.xml": b"<a><b><c><x/></c></b></a>",
    "last.xml": b"<a><c><b/></c></a>",
}
BAD = {  # name: (document, the flag it must raise)
    "bad-mismatched-end.xml": (b"<a><b></a>", Errors.MALFORMED),
    "bad-too-deep.xml": (b"<a>" * 9 + b"</a>" * 9, Errors.DEPTH_OVERFLOW),
    "bad-long-name.xml": (b"<a><" + b"x" * 40 + b"/></a>", Errors.NAME_TOO_LONG),
    "bad-garbage.xml": (b"\x00\xff<a/>", Errors.MALFORMED),
    "bad-truncated.xml": (b"<a><b>", Errors.MALFORMED),
    "bad-two-roots.xml": (b"<a/><b/>", Errors.MALFORMED),
}
NITF = ["outFile98.xml", "outFile43.xml", "outFile93.xml"]  # depth 4, 7 and 8


def documents() -> list[Document]:
    """Good, bad (each followed by a good one) and real NITF documents, back to back."""
    good = [Document(name, data) for name, data in GOOD.items()]
    bad = [Document(name, data) for name, (data, _) in BAD.items()]
    nitf = [Document.from_path(DATA / "nitf/docs" / name) for name in NITF]
    out = [
        good[0],
        good[1],
        nitf[0],
        bad[0],
        good[4],
        bad[1],
        good[3],
        bad[2],
        good[2],
        bad[3],
        nitf[1],
        bad[4],
        good[3],
        bad[5],
        nitf[2],
        good[5],
    ]
    assert len({d.name for d in out}) == len(out) - 1  # tiny.xml twice
    return out


def config(build_dir, tmp_path, **changes) -> RegressionConfig:
    base = dict(
        queries=QUERY_TEXTS,
        documents=documents(),
        options=OPTIONS,
        seed=5,
        p_valid=0.7,
        p_ready=0.5,
        build_dir=build_dir,
        replay_dir=tmp_path / "replays",
    )
    base.update(changes)
    return RegressionConfig(**base)


def reference_answers(docs) -> dict:
    queries = [parse_query(t, i + 1) for i, t in enumerate(QUERY_TEXTS)]
    ref = ReferenceFilter(queries)
    return {
        d.name: sorted(i + 1 for i in ref.filter(d.data))
        for d in docs
        if d.name in GOOD or d.name in NITF
    }


def check_clean_run(summary, docs, bytes_per_cycle: int = 1):
    assert summary.mismatches == 0, summary.format()
    assert summary.replay is None
    assert summary.queries == 12 and summary.clusters == 3
    assert summary.documents == len(docs)
    assert summary.cycles > summary.bytes / bytes_per_cycle  # valid gaps, the final readout
    assert summary.input_stalls > 0 and summary.readout_stalls > 0, summary.format()
    for name, numbers in reference_answers(docs).items():
        assert summary.answers[name] == numbers, name
    assert all(summary.answers[name] is None for name in BAD)
    assert summary.flagged == len(BAD)
    assert summary.matches == sum(map(len, reference_answers(docs).values())) + len(
        summary.answers["tiny.xml"]
    )  # tiny.xml is streamed twice
    assert summary.answers["recursive.xml"] == [2, 6]  # //b, /a/a//b


def test_verilator_multi_cluster_design_with_backpressure(build_dir, tmp_path):
    docs = documents()
    summary = run_regression(config(build_dir, tmp_path, simulator="verilator"))
    check_clean_run(summary, docs)


@pytest.mark.rtl
def test_icarus_agrees(build_dir, tmp_path):
    docs = documents()
    summary = run_regression(config(build_dir, tmp_path, simulator="icarus", seed=6))
    check_clean_run(summary, docs)


def test_wrong_model_expectation_is_a_cycle_mismatch_with_a_replay(build_dir, tmp_path):
    summary = run_regression(config(build_dir, tmp_path, fault="model"))
    assert not summary.ok
    kinds = [m["kind"] for m in summary.mismatch_details]
    assert kinds == ["cycle"], summary.format()
    first = summary.mismatch_details[0]["detail"]["first"]
    assert first["rtl"]["beat"]["first"] == 1 and first["rtl"]["beat"]["doc"] == 0
    assert first["rtl"]["beat"]["bit"] != first["model"]["beat"]["bit"]
    replay = summary.replay
    assert replay is not None and replay.parent == tmp_path / "replays"
    assert summary.replay_reproduces is True
    assert (replay / "queries.txt").read_text().splitlines() == QUERY_TEXTS
    assert [p.name for p in sorted((replay / "docs").iterdir())] == ["0000-doctype.xml"]
    command = (replay / "command.sh").read_text()
    assert (
        "xpfilt regress queries.txt docs --sim verilator --seed 5 --p-valid 0.7 "
        "--p-ready 0.5 --max-depth 8" in command
    )
    assert "--cluster-size 4 --fault model" in command


@pytest.mark.rtl
def test_wrong_reference_answer_is_a_document_mismatch(build_dir, tmp_path):
    summary = run_regression(
        config(build_dir, tmp_path, fault="reference", p_ready=1.0, verify_replay=False)
    )
    assert [(m["kind"], m["name"]) for m in summary.mismatch_details] == [
        ("document", "doctype.xml")
    ], summary.format()
    # the fault toggles readout bit 0's query: 10 (/*/*/pubdata), first in text order
    assert "queries missing [10], extra []" in summary.mismatch_details[0]["detail"]
    assert summary.replay is not None and summary.replay_reproduces is None
    # without verification the replay keeps every document up to the failing one
    assert len(list((summary.replay / "docs").iterdir())) == 1


@pytest.mark.rtl
def test_cli_regress_summary_and_exit_status(build_dir, tmp_path):
    (tmp_path / "q.txt").write_text("".join(t + "\n" for t in QUERY_TEXTS))
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("recursive.xml", "spaces-in-tags.xml"):
        (docs / name).write_bytes(GOOD[name])
    (docs / "zz-bad.xml").write_bytes(BAD["bad-truncated.xml"][0])
    args = [
        "regress",
        str(tmp_path / "q.txt"),
        str(docs),
        str(DATA / "nitf/docs" / NITF[0]),
        "--cluster-size",
        "4",
        "--max-depth",
        "8",
        "--build-dir",
        str(build_dir),
        "--replay-dir",
        str(tmp_path / "replays"),
        "--p-ready",
        "0.5",
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "mismatches:  0" in result.output
    assert "design:      12 queries in 3 clusters" in result.output
    assert "documents:   4," in result.output and "1 documents flagged" in result.output
    result = CliRunner().invoke(main, args + ["--fault", "reference", "--no-verify-replay"])
    assert result.exit_code == 1, result.output
    assert "MISMATCH:    document, document 0 (recursive.xml)" in result.output
    assert "command.sh" in result.output


# --- the checker itself, without a simulator --------------------------------------------------


def model_trace(plan, docs, pattern) -> Trace:
    """A trace as the testbench records it, with the model standing in for the RTL."""
    model = EngineModel(plan)
    trace = Trace()
    stream = [byte_payload(b, i == len(d) - 1) for d in docs for i, b in enumerate(d)]
    position = 0
    for c in range(len(stream) * 2 + 200):
        valid = int(position < len(stream) and pattern(c))
        payload = stream[min(position, len(stream) - 1)]
        out_ready = int(pattern(c + 7))
        ready, beat = model.step(valid, payload & 0xFF, bool(payload >> 8), out_ready)
        for lst, value in (
            (trace.valid, valid),
            (trace.payload, payload),
            (trace.out_ready, out_ready),
            (trace.ready, int(ready)),
            (trace.beat, -1 if beat is None else encode_beat(beat)),
        ):
            lst.append(value)
        if valid and ready:
            if payload >> 8:
                trace.doc_last_cycle.append(c)
            position += 1
    return trace


def test_checker_finds_the_first_differing_cycle():
    queries = [parse_query(t, i + 1) for i, t in enumerate(QUERY_TEXTS)]
    plan = compile_queries(queries, OPTIONS)
    docs = [GOOD["recursive.xml"], GOOD["tiny.xml"], GOOD["last.xml"]]
    trace = model_trace(plan, docs, lambda c: c % 3 != 1)
    assert compare_with_model(plan, trace)["first"] is None
    assert 0 in trace.ready  # the input did stall
    ready_at = trace.ready.index(0)
    trace.ready[ready_at] = 1
    beat_at = max(i for i, b in enumerate(trace.beat) if b >= 0)
    trace.beat[beat_at] ^= 1
    result = compare_with_model(plan, trace)
    assert result["mismatching_cycles"] == 2
    assert result["first"]["cycle"] == ready_at
    assert result["first"]["rtl"]["ready"] and not result["first"]["model"]["ready"]
    assert [b.doc for b in trace.transferred() if b.last] == [0, 1, 2]


def test_readout_payload_layout_matches_the_rtl_port():
    beat = Beat(bit=1, first=0, last=1, doc=0xBEEF, errors=0b101)
    assert encode_beat(beat) == 1 | 1 << 2 | 0xBEEF << 3 | 0b101 << 19
    assert decode_beat(encode_beat(beat)) == beat
    assert byte_payload(0x3C, True) == 0x13C


def test_expectations_of_bad_documents():
    ref, numbers = reference_for([parse_query("//b", 7)])
    for name, (data, flag) in BAD.items():
        exp = expectation(ref, numbers, data, max_depth=8, max_name=32)
        assert exp.numbers is None and exp.must_flag == flag, name
    exp = expectation(ref, numbers, GOOD["recursive.xml"], max_depth=8, max_name=32)
    assert exp.numbers == (7,) and exp.must_flag == 0


def test_expectations_of_documents_with_entity_references():
    """Issue 35 #7: a reference to an entity other than the five predefined ones must be
    flagged (``entity``); one in a comment, a CDATA section, a PI or the DOCTYPE need not."""
    ref, numbers = reference_for([parse_query("//b", 7)])
    dtd = b'<!DOCTYPE a [<!ENTITY m "<b/>"><!ENTITY n "&m;"><!ENTITY t "x">]>'
    for body, flag in [
        (b"<a>&m;</a>", Errors.ENTITY),
        (b"<a x='&t;'>&n;</a>", Errors.ENTITY),
        (b"<a>&amp;&lt;&#60;&#x3c;<b y='&quot;&apos;&gt;'/></a>", 0),
        (b"<a><!-- &m; --><![CDATA[&m;]]><?p &m;?><b/></a>", 0),
    ]:
        exp = expectation(ref, numbers, dtd + body, max_depth=8, max_name=32)
        assert exp.must_flag == flag, body
        assert (exp.numbers is None) == bool(flag), body


# --- long regressions (make regress) ----------------------------------------------------------


def structural_cases():
    return [
        pytest.param(q, folder, tsv, id=case)
        for case, q, folder, tsv in expected_cases()
        if load_queries(q).queries[0].is_structural
    ]


@pytest.mark.regress
@pytest.mark.parametrize("readout", ["serial", "sparse"])
@pytest.mark.parametrize("queries,folder,tsv", structural_cases())
def test_regress_shared_query_set_on_verilator(queries, folder, tsv, readout, build_dir, tmp_path):
    summary = run_regression(
        RegressionConfig(
            queries=queries,
            documents=[folder],
            options=CompileOptions(readout=readout),
            build_dir=build_dir,
            seed=1,
            replay_dir=tmp_path / "replays",
        )
    )
    print(summary.format())
    assert summary.ok, summary.format()
    expected = {name: list(numbers) for name, numbers in read_expected(tsv).items()}
    assert summary.answers == expected


@pytest.mark.regress
def test_regress_icarus_agrees_on_256_queries(build_dir, tmp_path):
    docs = load_documents([DATA / "nitf/docs"])[:12]
    queries = (DATA / "queries/nitf-d8-p15-n2000.txt").read_text().splitlines()[:256]
    for simulator in ("icarus", "verilator"):
        summary = run_regression(
            RegressionConfig(
                queries=queries,
                documents=docs,
                simulator=simulator,
                build_dir=build_dir,
                seed=2,
                replay_dir=tmp_path / "replays",
            )
        )
        print(summary.format())
        assert summary.ok, summary.format()


RANDOM_QUERIES = [
    "/a",
    "//b",
    "/a/b",
    "/a//c",
    "//c/*",
    "/*/b//a",
    "//a/a",
    "/d.e",
    "//d.e/*",
    "/a/*/*/b",
    "//b//b",
    "/*//c/a",
    "//a/b/c",
    "/b",
    "//*/d.e",
    "/a/a/a",
]


@pytest.mark.regress
@examples(ci=12)
@given(
    docs=st.lists(
        st.tuples(random_documents(), st.integers(0, 4), st.integers(0, 10_000)),
        min_size=1,
        max_size=5,
    ),
    seed=st.integers(0, 1000),
)
def test_regress_random_documents_shrink_to_a_replay(docs, seed, build_dir):
    """Random documents (some cut short: malformed) through one design with several clusters;
    a failure is shrunk by hypothesis, and the replay of the last (smallest) failing example is
    left in build/sim/replays/hypothesis."""
    streamed = [
        Document(f"doc{i}.xml", data[: cut % len(data)] if kind == 0 else data)
        for i, (data, kind, cut) in enumerate(docs)
    ]
    streamed = [d for d in streamed if d.data]
    if not streamed:
        return
    config = RegressionConfig(
        queries=RANDOM_QUERIES,
        documents=streamed,
        options=CompileOptions(cluster_size=6, max_depth=6),
        seed=seed,
        p_valid=0.85,
        p_ready=0.6,
        build_dir=build_dir,
    )
    summary = run_regression(config, write_replay=False)
    if not summary.ok:
        folder = build_dir / "replays" / "hypothesis"
        shutil.rmtree(folder, ignore_errors=True)
        summary = run_regression(replace(config, replay_dir=folder, verify_replay=True))
    assert summary.ok, summary.format()


# --- the programmable engine: configuration loading and reconfiguration -----------------------

PROG_SPEC = HardwareSpec(
    clusters=2, columns=8, max_tag_len=4, max_depth=8, max_name=32, tags=6
)  # B names 5 tags
PROG_A = ["/a/b", "//b", "/a//c", "/*/b/c"]
PROG_B = ["//c", "/a/*/c", "//x/c", "/nitf/head", "//toolong/b"]  # "toolong" does not fit


def prog_items():
    """Documents before any configuration, load A, a corrupt stream, load B, a truncated
    stream, a foreign one, A completing while two documents stream (A's stream, 1,248 bits
    since format 9's nibble rows, is longer than one) and B right after them (B waits for A's
    commit at the document boundary), documents between each."""
    good = [Document(name, data) for name, data in GOOD.items()]
    bad = [Document(name, data) for name, (data, _) in BAD.items()]
    nitf = Document.from_path(DATA / "nitf/docs" / NITF[0])
    return [
        ("documents", [good[1], bad[0]]),
        ("config", 0),
        ("documents", [good[0], good[1]]),
        ("corrupt", 1),
        ("documents", [good[4], bad[1], good[1]]),
        ("config", 1),
        ("documents", [good[1], nitf, good[2]]),
        ("truncated", 0),
        ("documents", [bad[4], good[5]]),
        ("foreign", 0),
        ("overlapping", 0),
        ("documents", [nitf, nitf]),
        ("config", 1),
        ("documents", [good[1], good[0]]),
    ]


def prog_config(build_dir, tmp_path, **changes) -> RegressionConfig:
    base = dict(
        queries=PROG_A,
        reconfigure=[PROG_B],
        documents=[],
        mode="programmable",
        hardware=PROG_SPEC,
        items=prog_items(),
        seed=3,
        p_valid=0.7,
        p_ready=0.3,
        build_dir=build_dir,
        replay_dir=tmp_path / "replays",
    )
    base.update(changes)
    return RegressionConfig(**base)


def check_clean_programmable_run(summary):
    assert summary.ok, summary.format()
    assert summary.mode == "programmable" and summary.clusters == 2
    assert summary.queries == 4 + 4  # //toolong/b is skipped
    assert any("toolong" in s for s in summary.skipped_queries)
    assert [(s["label"].split()[0], s["verdict"]) for s in summary.streams] == [
        ("config", "accepted"),
        ("corrupt", "rejected"),
        ("config", "accepted"),
        ("truncated", "rejected"),
        ("foreign", "rejected"),
        ("overlapping", "accepted"),
        ("config", "accepted"),
    ]
    assert summary.config_stalls > 0  # B waited for A's commit
    # 16-bit readouts rarely fill the frame, so bytes_in seldom stalls here; readout does
    assert summary.readout_stalls > 0, summary.format()
    assert summary.flagged == 3  # mismatched end, too deep, truncated


def test_programmable_verilator_loads_rejects_and_reconfigures(build_dir, tmp_path):
    summary = run_regression(prog_config(build_dir, tmp_path))
    check_clean_programmable_run(summary)
    # answers by name are the last streaming of each name: recursive.xml last ran under B
    ref_b = ReferenceFilter([parse_query(t, i + 1) for i, t in enumerate(PROG_B[:4])])
    assert summary.answers["recursive.xml"] == sorted(
        i + 1 for i in ref_b.filter(GOOD["recursive.xml"])
    )
    assert summary.answers["doctype.xml"] == [1]  # //c under B


@pytest.mark.rtl
def test_programmable_unconfigured_documents_match_nothing(build_dir, tmp_path):
    docs = [Document("r.xml", GOOD["recursive.xml"]), Document("x.xml", b"<a><b/></a>")]
    summary = run_regression(
        prog_config(
            build_dir,
            tmp_path,
            items=[("documents", docs), ("corrupt", 0), ("documents", docs[:1])],
        )
    )
    assert summary.ok, summary.format()
    assert summary.answers == {"r.xml": [], "x.xml": []}
    assert summary.matches == 0


@pytest.mark.rtl
@pytest.mark.parametrize(
    "fault, kind", [("model", "cycle"), ("status", "cycle"), ("reference", "document")]
)
def test_programmable_checker_can_fail(build_dir, tmp_path, fault, kind):
    summary = run_regression(prog_config(build_dir, tmp_path, fault=fault))
    assert not summary.ok
    assert summary.mismatch_details[0]["kind"] == kind, summary.format()
    assert summary.replay is not None and (summary.replay / "command.sh").exists()
    assert (summary.replay / "items.json").exists()
    if fault == "status":
        first = summary.mismatch_details[0]["detail"]["first"]
        assert first["rtl"]["status"]["generation"] == 1
        assert first["model"]["status"]["generation"] == 2


@pytest.mark.rtl
def test_cli_regress_programmable(build_dir, tmp_path):
    (tmp_path / "a.txt").write_text("".join(t + "\n" for t in PROG_A))
    (tmp_path / "b.txt").write_text("".join(t + "\n" for t in PROG_B[:4]))
    hw = tmp_path / "hw"
    hw.mkdir()
    (hw / "hardware.json").write_text(PROG_SPEC.to_json())
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("recursive.xml", "spaces-in-tags.xml", "doctype.xml", "last.xml"):
        (docs / name).write_bytes(GOOD[name])
    args = [
        "regress",
        str(tmp_path / "a.txt"),
        str(docs),
        "--mode",
        "programmable",
        "--hw",
        str(hw),
        "--reconfigure",
        str(tmp_path / "b.txt"),
        "--build-dir",
        str(build_dir),
        "--replay-dir",
        str(tmp_path / "replays"),
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "mismatches:  0" in result.output
    assert "mode:        programmable" in result.output
    assert result.output.count("rejected (expected rejected)") == 2
    assert f"delta {tmp_path / 'b.txt'}" in result.output  # set 2 comes as a delta
    assert result.output.count("accepted (expected accepted)") == 2
    result = CliRunner().invoke(
        main,
        ["regress", str(tmp_path / "a.txt"), str(docs), "--reconfigure", str(tmp_path / "b.txt")],
    )
    assert result.exit_code == 2 and "--mode programmable" in result.output


def test_programmable_checker_without_a_simulator():
    """The model standing in for the RTL agrees with itself; a flipped status bit is found."""
    from xpfilt.compiler.programmable import configure
    from xpfilt.model.programmable import ProgrammableModel
    from xpfilt.sim.programmable_checker import (
        ProgTrace,
        compare_programmable_with_model,
        config_payload,
        encode_status,
        stream_bits,
    )

    stream = configure([parse_query(t, i + 1) for i, t in enumerate(PROG_A)], PROG_SPEC).stream()
    bits = stream_bits(stream)
    model, trace = ProgrammableModel(PROG_SPEC), ProgTrace()
    j = 0
    for c in range(len(bits) * 2 + 20):
        cv = int(j < len(bits) and c % 3 != 0)
        cp = config_payload(bits[min(j, len(bits) - 1)], j == len(bits) - 1)
        status = encode_status(model.status)
        ready, beat = model.step(False, 0, False, True, cv, cp & 1, bool(cp >> 1))
        for lst, value in (
            (trace.valid, 0),
            (trace.payload, 0),
            (trace.out_ready, 1),
            (trace.ready, int(ready)),
            (trace.beat, -1),
            (trace.cfg_valid, cv),
            (trace.cfg_payload, cp),
            (trace.cfg_ready, int(model.config_ready)),
            (trace.status, status),
        ):
            lst.append(value)
        j += cv and model.config_ready
    assert compare_programmable_with_model(PROG_SPEC, trace)["first"] is None
    assert decodeable_generation(trace.status[-1]) == 1
    trace.status[-1] ^= 1 << 9  # rejected
    result = compare_programmable_with_model(PROG_SPEC, trace)
    assert result["mismatching_cycles"] == 1 and result["first"]["rtl"]["status"]["rejected"]


def decodeable_generation(value):
    from xpfilt.sim.programmable_checker import decode_status

    return decode_status(value)["generation"]


@pytest.mark.rtl
def test_programmable_icarus_agrees(build_dir, tmp_path):
    check_clean_programmable_run(
        run_regression(prog_config(build_dir, tmp_path, simulator="icarus", seed=8))
    )


@pytest.mark.rtl
def test_programmable_streams_completing_with_documents_in_flight(build_dir, tmp_path):
    """Issue 11, defect 2, under Verilator: configuration streams sent while short documents
    stream back to back (good and malformed, 1-5 bytes) complete with documents in flight; every
    cycle equals the model, and every document is answered wholly by the configuration active
    when its first byte went in (A's tag entries with B's flags would answer ``<a/>`` with
    ``/a/a``)."""
    tiny = [b"<a/>", b"<a />", b"x", b"<a/>", b"<d/>", b"<a  />", b"<a>", b"<a/>", b"<c/>"]
    items = [("config", 0)]
    for run in range(8):
        docs = [Document(f"r{run}-{i}.xml", tiny[(i + run) % len(tiny)]) for i in range(80)]
        items += [("overlapping", 1 - run % 2), ("documents", docs)]
    summary = run_regression(
        prog_config(
            build_dir,
            tmp_path,
            items=items,
            queries=["/a/a"],
            reconfigure=[["/c", "//d"]],
            p_valid=0.9,
            p_ready=0.9,
        )
    )
    assert summary.ok, summary.format()
    assert [s["verdict"] for s in summary.streams] == ["accepted"] * 9
    for run in range(8):  # each stream ends inside its run: both configurations answer there
        labels = {
            label for name, label in summary.document_configurations if name.startswith(f"r{run}-")
        }
        assert len(labels) == 2, (run, labels)


@pytest.mark.rtl
def test_back_to_back_short_documents_valid_and_ready_always_1(build_dir, tmp_path):
    """Issue 11, defect 1, under Verilator: 1-4-byte documents back to back (good and
    malformed) with the input always valid and the readout always ready: one readout each."""
    tiny = [b"<a/>", b"x", b"x", b"<b/>", b"<>", b"x", b"<c/>", b"y"]
    docs = [Document(f"short{i}.xml", tiny[i % len(tiny)]) for i in range(60)]
    summary = run_regression(config(build_dir, tmp_path, documents=docs, p_valid=1.0, p_ready=1.0))
    assert summary.mismatches == 0, summary.format()
    malformed = sum(1 for d in docs if d.data in (b"x", b"y", b"<>"))
    assert summary.documents == 60 and summary.flagged == malformed == 37


# --- the W-byte engine (issue 18) ----------------------------------------------------------------


@pytest.mark.rtl
@pytest.mark.parametrize(
    "width",
    [4, pytest.param(2, marks=pytest.mark.regress), pytest.param(8, marks=pytest.mark.regress)],
)
def test_verilator_wide_engine_with_backpressure(build_dir, tmp_path, width):
    """Beats of W bytes with random gaps and readout backpressure: every cycle = the model,
    every document = the reference or flagged."""
    docs = documents()
    summary = run_regression(config(build_dir, tmp_path, bytes_per_cycle=width))
    check_clean_run(summary, docs, width)


@pytest.mark.rtl
@pytest.mark.parametrize("width", [4, pytest.param(8, marks=pytest.mark.regress)])
def test_wide_engine_back_to_back_short_documents_valid_and_ready_always_1(
    build_dir, tmp_path, width
):
    tiny = [b"<a/>", b"x", b"x", b"<b/>", b"<>", b"x", b"<c/>", b"y", b"<a><b/></a>"]
    docs = [Document(f"short{i}.xml", tiny[i % len(tiny)]) for i in range(60)]
    summary = run_regression(
        config(build_dir, tmp_path, documents=docs, p_valid=1.0, p_ready=1.0, bytes_per_cycle=width)
    )
    assert summary.mismatches == 0, summary.format()
    malformed = sum(1 for d in docs if d.data in (b"x", b"y", b"<>"))
    assert summary.documents == 60 and summary.flagged == malformed


@pytest.mark.regress
@pytest.mark.parametrize("queries,folder,tsv", structural_cases())
@pytest.mark.parametrize("width", [2, 4, 8], ids=lambda w: f"W{w}")
def test_regress_shared_query_set_on_verilator_at_bytes_per_cycle(
    width, queries, folder, tsv, build_dir, tmp_path
):
    """Issue 18's done-when: the W-byte engine (W = 2, 4, 8) agrees with the model every cycle
    and with the shared expected answers on every shared structural set (ids W<w>-<set>)."""
    summary = run_regression(
        RegressionConfig(
            queries=queries,
            documents=[folder],
            build_dir=build_dir,
            seed=1,
            bytes_per_cycle=width,
            replay_dir=tmp_path / "replays",
        )
    )
    print(summary.format())
    assert summary.ok, summary.format()
    expected = {name: list(numbers) for name, numbers in read_expected(tsv).items()}
    assert summary.answers == expected


# --- the sparse readout -------------------------------------------------------------------------


@pytest.mark.rtl
def test_verilator_sparse_readout(build_dir, tmp_path):
    """The custom engine with the sparse readout: every cycle equals the model and every
    document the reference (good, bad and real documents, random valid and ready)."""
    docs = documents()
    summary = run_regression(
        config(build_dir, tmp_path, options=replace(OPTIONS, readout="sparse"))
    )
    check_clean_run(summary, docs)


@pytest.mark.rtl
@pytest.mark.parametrize("fault, kind", [("model", "cycle"), ("reference", "document")])
def test_sparse_checker_can_fail(build_dir, tmp_path, fault, kind):
    summary = run_regression(
        config(build_dir, tmp_path, fault=fault, options=replace(OPTIONS, readout="sparse"))
    )
    assert not summary.ok and summary.mismatch_details[0]["kind"] == kind


@pytest.mark.rtl
def test_programmable_sparse_readout(build_dir, tmp_path):
    summary = run_regression(
        prog_config(build_dir, tmp_path, hardware=replace(PROG_SPEC, readout="sparse"))
    )
    check_clean_programmable_run(summary)
