"""``make demo``: the main job end to end on the embedded defaults, explained as it runs.

1. Load a shared set of 2,000 NITF path profiles and the 100 shared NITF news documents.
2. Filter every document with the reference filter (the paper's stack algorithm) and check each
   answer against the shared expected results (computed with lxml and YFilter).
3. Cross-check the reference against lxml evaluating every query separately, and time both.
4. Generate a fresh workload from the NITF DTD (profiles and a ~220 KB document) and filter it.
5. Compile the profiles into custom hardware (plan, Verilog, report) and run the cycle-accurate
   model of that hardware over the documents: same answers, one byte per cycle.
6. The profile language: generated profiles with value predicates, clauses and nested paths
   (fast = reference = lxml, and the model of the custom hardware = reference: twigs checked as
   elements close), and the shared predicate set through the fast engine and through the model
   of the custom hardware, which evaluates attribute and text() predicates as the bytes stream.
7. Generate programmable hardware once, then load two different profile sets into it as
   configuration streams and filter with each, without regenerating anything.
8. A small design-space sweep on Spark (``local[*]``): 4 custom-engine points compiled and run
   through the model in parallel, saved as Parquet, summarized in a report with plots.
9. A bitstream: a custom engine for 16 of the profiles, behind the UART host link, built for
   the iCEBreaker (iCE40 UP5K) with Yosys and nextpnr (about a minute; ``xpfilt host`` talks to
   the board, ``xpfilt sim-board`` simulates it).

Run ``python -m xpfilt.demo [--out DIR]``; the TSV answers are written under DIR (default ``out/``).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

import click

from xpfilt.engines import filter_batch
from xpfilt.lang.xpath import load_queries, parse_query
from xpfilt.paths import shared_data
from xpfilt.software.events import Document, load_documents, parse_events
from xpfilt.software.lxml_filter import LxmlFilter
from xpfilt.software.reference import ReferenceFilter
from xpfilt.software.results import format_tsv_line, read_expected

QUERY_SET = "nitf-d8-p15-n2000"


def heading(text: str) -> None:
    click.secho(f"\n== {text}", bold=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("out"))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    data = shared_data()
    ok = True

    heading("1. Profiles and documents")
    loaded = load_queries(data / "queries" / f"{QUERY_SET}.txt")
    queries = loaded.queries
    paths = load_documents([data / "nitf/docs"])
    docs = [Document.from_path(p) for p in paths]
    steps = Counter(len(q) for q in queries)
    print(
        f"{len(queries)} profiles from queries/{QUERY_SET}.txt "
        f"(depth up to 8, 15 % '*' and '//'), e.g. {queries[2]}"
    )
    print("  steps per profile: " + ", ".join(f"{k}: {v}" for k, v in sorted(steps.items())))
    print(f"{len(docs)} NITF documents, {sum(len(d.data) for d in docs) / 1e3:.0f} KB in all")

    heading("2. Filter with the reference filter, check against the shared expected answer")
    engine = ReferenceFilter(queries)
    results = []
    start = time.perf_counter()
    with click.progressbar(docs, label="filtering", file=sys.stderr) as bar:
        for result in filter_batch(engine, bar):
            results.append(result)
    elapsed = time.perf_counter() - start
    expected = read_expected(data / "expected" / f"nitf-docs--{QUERY_SET}.tsv")
    agree = sum(expected.get(r.name) == r.matches for r in results)
    tsv = args.out / f"nitf-docs--{QUERY_SET}.tsv"
    tsv.write_text("".join(format_tsv_line(r.name, r.matches) + "\n" for r in results))
    counts = [len(r.matches) for r in results]
    print(
        f"{agree}/{len(results)} documents agree with expected/nitf-docs--{QUERY_SET}.tsv "
        f"-> answers in {tsv}"
    )
    print(
        f"  profiles matched per document: min {min(counts)}, median "
        f"{sorted(counts)[len(counts) // 2]}, max {max(counts)}"
    )
    ok &= agree == len(results)

    heading("3. Cross-check with lxml (each profile evaluated separately) and time both")
    lxml_engine = LxmlFilter(queries)
    start_lx = time.perf_counter()
    lxml_answers = [lxml_engine.filter(d) for d in docs]
    elapsed_lx = time.perf_counter() - start_lx
    same = sum(engine.filter(d) == a for d, a in zip(docs, lxml_answers))
    size = sum(len(d.data) for d in docs)
    print(f"{same}/{len(docs)} documents: reference == lxml")
    print(f"  reference filter: {size / elapsed / 1e6:6.2f} MB/s   (all 2,000 profiles at once)")
    print(
        f"  lxml            : {size / elapsed_lx / 1e6:6.2f} MB/s   (one XPath at a time), "
        f"{elapsed_lx / elapsed:.1f}x slower"
    )
    ok &= same == len(docs)

    heading("4. A fresh workload generated from the NITF DTD")
    ok &= _generated_workload(data, args.out)

    heading("5. Custom hardware: compile to Verilog, run the cycle-accurate model")
    ok &= _custom_hardware(queries, docs, expected, args.out)

    heading("6. Value predicates, clauses and nested paths (software and hardware)")
    ok &= _profile_language(data, docs)

    heading("7. Programmable hardware: generate once, load two profile sets")
    ok &= _programmable_hardware(data, docs, args.out)

    heading("8. A design-space sweep on Spark (compile + model; synthesis is a sweep option)")
    ok &= _sweep(args.out)

    heading("9. A bitstream for a real board (iCEBreaker, iCE40 UP5K)")
    ok &= _bitstream(queries[:16], args.out)

    heading("Result")
    if ok:
        click.secho(
            "All answers agree. See README.md for the commands behind each step.", fg="green"
        )
    else:
        click.secho("Some answers disagree: see above.", fg="red")
    return 0 if ok else 1


def _matched(readout, numbers_by_bit) -> tuple[int, ...]:
    """The query numbers, in order, whose readout bit is set (``numbers_by_bit``: (readout
    bit, query number) pairs, a plan's or a configuration's readout map)."""
    from xpfilt.model.custom import answers_in

    return answers_in(numbers_by_bit, readout.bits)


def _custom_hardware(queries, docs, expected, out: Path) -> bool:
    from xpfilt.compiler.custom import CompileOptions, Plan
    from xpfilt.hdl.verilog import compile_to_directory
    from xpfilt.model.custom import EngineModel, run_documents

    start = time.perf_counter()
    report = compile_to_directory(queries, CompileOptions(), out / "custom")
    elapsed = time.perf_counter() - start
    for line in report.splitlines():
        if line.startswith(("* stack columns", "* clusters", "| no optimization", "| + (3)")):
            print("  " + line.lstrip("* "))
    print(f"  plan + Verilog in {elapsed:.1f} s -> {out / 'custom'}/xpfilt_engine.v")
    plan = Plan.from_json((out / "custom" / "plan.json").read_text())  # the plan just written
    model = EngineModel(plan)
    start = time.perf_counter()
    readouts = run_documents(model, [d.data for d in docs])
    elapsed = time.perf_counter() - start
    agree = sum(
        _matched(r, enumerate(plan.query_numbers)) == expected[d.name] and not r.errors
        for d, r in zip(docs, readouts)
    )
    size = sum(len(d.data) for d in docs)
    print(
        f"{agree}/{len(docs)} documents: the model of the generated hardware gives the "
        "expected answer"
    )
    print(
        f"  {model.cycle:,} clock cycles for {size:,} bytes "
        f"({size / model.cycle:.3f} bytes per cycle, readout of the last document included)"
    )
    print(
        f"  at 100 MHz that is {size / model.cycle * 100:.0f} MB/s; the model simulates "
        f"{model.cycle / elapsed:,.0f} cycles/s"
    )
    return agree == len(docs)


def _profile_language(data: Path, docs) -> bool:
    """Generated profiles with predicates, clauses and twigs: fast = reference = lxml = the
    hardware model; the shared predicate set: the fast engine and the hardware model (attribute
    predicates in hardware) against the shared expected answer."""
    from xpfilt import workloads
    from xpfilt.compiler.custom import CompileOptions, compile_queries, hardware_queries
    from xpfilt.model.custom import EngineModel, run_documents
    from xpfilt.software.fast import FastFilter

    schema = workloads.DtdSchema.load(data / "nitf/nitf-2-5.dtd")
    axes = workloads.PredicateGenConfig(
        count=1, p_text=0.3, operators=("=", "!=", "<", ">="), p_clause=0.3, nested_paths=1
    )
    texts = workloads.generate_queries(
        schema, workloads.QueryGenConfig(count=500, max_depth=6, seed=1, predicates=axes)
    )
    generated = [parse_query(t, i + 1) for i, t in enumerate(texts)]
    engines = [FastFilter(generated), ReferenceFilter(generated), LxmlFilter(generated)]
    answers = [[engine.filter(d) for d in docs] for engine in engines]
    same = answers[0] == answers[1] == answers[2]
    print(
        f"{len(generated)} generated profiles with a predicate and a nested path each "
        f"(e.g. {texts[1]}): {sum(map(len, answers[0])):,} matches; fast == reference == "
        f"lxml: {same}"
    )
    twig_plan = compile_queries(generated, CompileOptions())
    twig_readouts = run_documents(EngineModel(twig_plan), [d.data for d in docs])
    twigs_agree = sum(
        _matched(r, enumerate(twig_plan.query_numbers))
        == tuple(sorted(generated[i].number for i in a))
        and not r.errors
        for r, a in zip(twig_readouts, answers[1])
    )
    print(
        f"  in hardware (the model of the custom engine, twigs checked as elements close): "
        f"{twigs_agree}/{len(docs)} documents = reference"
    )

    name = "nitf-d6-p15-pred1-n1000"
    queries = load_queries(data / "queries" / f"{name}.txt").queries
    expected = read_expected(data / "expected" / f"nitf-docs--{name}.tsv")
    fast = FastFilter(queries)
    numbers = [q.number for q in queries]
    agree = sum(tuple(sorted(numbers[i] for i in fast.filter(d))) == expected[d.name] for d in docs)
    print(
        f"queries/{name}.txt (e.g. {queries[0]}): fast engine {agree}/{len(docs)} documents "
        "as expected"
    )
    accepted, refused = hardware_queries(queries)
    plan = compile_queries(accepted, CompileOptions())
    model = EngineModel(plan)
    readouts = run_documents(model, [d.data for d in docs])
    kept = set(plan.query_numbers)
    hardware_agree = sum(
        _matched(r, enumerate(plan.query_numbers))
        == tuple(n for n in expected[d.name] if n in kept)
        and not r.errors
        for d, r in zip(docs, readouts)
    )
    print(
        f"  in hardware (the model of the custom engine): {len(accepted)} of {len(queries)} "
        f"profiles, {len(plan.conditions)} attribute and text() conditions evaluated as the "
        f"bytes stream; "
        f"{hardware_agree}/{len(docs)} documents as expected"
    )
    if refused:
        print(f"  refused, with the reason: {refused[0]} ...")
    return same and agree == len(docs) and hardware_agree == len(docs) and twigs_agree == len(docs)


def _programmable_hardware(data: Path, docs, out: Path) -> bool:
    from xpfilt.compiler.programmable import HardwareSpec, configure
    from xpfilt.hdl.verilog import build_programmable
    from xpfilt.model.custom import run_documents
    from xpfilt.model.programmable import ProgrammableModel, load_configuration

    spec = HardwareSpec(clusters=4, columns=256, max_tag_len=24, tags=127)
    build_programmable(spec, out / "programmable")
    print(
        f"hardware: {spec.clusters} clusters x {spec.columns} generic columns "
        f"-> {out / 'programmable'}/xpfilt_engine.v (generated once)"
    )
    model = ProgrammableModel(spec)
    ok = True
    for name in ("yfilter-suite-simple-paths", "nitf-d4-p25-n2000"):
        queries = load_queries(data / "queries" / f"{name}.txt").queries
        configuration = configure(queries, spec)
        stream = configuration.stream()
        cycles = load_configuration(model, stream)
        placed = [q for q in queries if q.number in configuration.answers]
        readouts = run_documents(model, [d.data for d in docs])
        reference = ReferenceFilter(placed)
        agree = 0
        for d, r in zip(docs, readouts):
            got = _matched(r, ((where, n) for n, where in configuration.answers.items()))
            want = tuple(sorted(placed[i].number for i in reference.filter(d)))
            agree += got == want
        print(
            f"  {name}: {len(placed)} of {len(queries)} profiles loaded "
            f"({len(stream) * 8:,} configuration bits, {cycles:,} cycles = "
            f"{cycles / 100e6 * 1e3:.1f} ms at 100 MHz); {agree}/{len(docs)} documents "
            "agree with the reference"
        )
        if len(placed) < len(queries):
            print(f"    the rest did not fit: {configuration.rejected[0][1]} ...")
        ok &= agree == len(docs)
    return ok


def _generated_workload(data: Path, out: Path) -> bool:
    from xpfilt import workloads

    schema = workloads.DtdSchema.load(data / "nitf/nitf-2-5.dtd")
    config = workloads.QueryGenConfig(
        count=1000, max_depth=6, p_wildcard=0.15, p_descendant=0.15, seed=1
    )
    texts = workloads.generate_queries(schema, config)
    (out / "generated-queries.txt").write_text("".join(t + "\n" for t in texts))
    document = workloads.generate_document(
        schema, workloads.DocGenConfig(target_bytes=220_000, max_depth=16, seed=1)
    )
    (out / "generated-doc.xml").write_bytes(document)
    events = parse_events(document)
    queries = [parse_query(t, i + 1) for i, t in enumerate(texts)]
    ref = ReferenceFilter(queries).filter(document)
    lx = LxmlFilter(queries).filter(document)
    print(
        f"{len(texts)} profiles (e.g. {texts[0]}) and a {len(document) / 1e3:.0f} KB document "
        f"with {sum(e.kind == 0 for e in events)} elements -> {out}/generated-*"
    )
    print(f"  {len(ref)} of {len(queries)} profiles match; reference == lxml: {ref == lx}")
    return ref == lx


def _sweep(out: Path) -> bool:
    from xpfilt.scale.report import write_report
    from xpfilt.scale.store import SweepStore
    from xpfilt.scale.sweep import load_spec, run_sweep

    spec = load_spec(
        {
            "grid": {
                "engine": "custom",
                "queries": [32, 128],
                "depth": 8,
                "cluster_size": [16, 64],
                "documents": 1,
                "document_bytes": 20_000,
            }
        }
    )
    folder = out / "sweep"
    if shutil.which("java") is None:
        print(
            "  skipped: Spark needs Java 17 (Debian/Ubuntu: apt-get install "
            "openjdk-17-jre-headless), then rerun `make demo`"
        )
        return True
    try:
        summary = run_sweep(spec, folder, log=print)
    except RuntimeError as exc:  # PySpark or Java missing: say so, do not fail the demo
        print(f"  skipped: {exc}")
        return True
    print("  " + summary.line())
    rows = sorted(SweepStore(folder).rows(), key=lambda r: (r["queries"], r["cluster_size"]))
    print("  queries  cluster size  columns  clusters  bytes/cycle")
    for r in rows:
        print(
            f"  {r['queries']:7}  {r['cluster_size']:12}  {r['columns'] or 0:7}  "
            f"{r['clusters'] or 0:8}  {r['bytes_per_cycle'] or 0:11.3f}"
        )
    report = write_report(folder)
    print(f"  report with plots: {report.folder / 'index.html'}")
    print(
        "  the paper's Fig. 9-11 with Yosys + nextpnr: xpfilt sweep sweeps/paper-figures.yaml "
        "-o out/paper"
    )
    return all(r["status"] == "ok" for r in rows)


def _bitstream(queries, out: Path) -> bool:
    from xpfilt.boards.build import BuildConfig, build_board, custom_design
    from xpfilt.compiler.custom import CompileOptions
    from xpfilt.eda.synth import ToolError

    folder = out / "icebreaker"
    start = time.perf_counter()
    try:
        design = custom_design(queries, CompileOptions(max_depth=8))
        result = build_board(
            design,
            BuildConfig("icebreaker", folder, timeout=900),
            log=lambda message: print(f"  {message}"),
        )
    except ToolError as exc:  # tools missing or a failed run: say so, do not fail the demo
        print(f"  skipped: {exc}")
        return True
    fit = result.fit or {}
    print(
        f"  {folder / result.bitstream} in {time.perf_counter() - start:.0f} s: "
        f"{fit.get('luts', 0):,} of {fit.get('device_luts', 0):,} LUTs, Fmax "
        f"{result.fmax_mhz:.1f} MHz (the board clock is 12 MHz)"
    )
    print(
        f"  on a board: iceprog {folder / result.bitstream}; then xpfilt host --port "
        f"/dev/ttyUSB1 --build {folder} -q QUERIES DOCS..."
    )
    return result.bitstream is not None


if __name__ == "__main__":
    sys.exit(main())
