"""The four fuzz categories. Each takes a seeded :class:`random.Random`, a case count and a
:class:`~xpfilt.verify.fuzz.report.Recorder`, and counts what it checked and what failed."""

from __future__ import annotations

import dataclasses
import random
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Optional

from xpfilt.compiler.custom import CompileOptions, compile_queries
from xpfilt.software.events import Document

try:
    from xpfilt.software.events import utf8_document
except ImportError:  # before the one encoding policy (issue 11 #5): engines see the bytes

    def utf8_document(document):
        return document


from xpfilt.compiler.programmable import HardwareSpec, configure
from xpfilt.lang.xpath import load_queries, parse_query
from xpfilt.model.custom import ModelEngine
from xpfilt.model.programmable import ProgrammableModel, ProgrammableModelEngine, load_configuration
from xpfilt.software.lxml_filter import LxmlFilter
from xpfilt.software.reference import ReferenceFilter
from xpfilt.verify.fuzz import generate as gen
from xpfilt.verify.fuzz.outcomes import DOCUMENTED, Outcome, classify, run_engine, signature
from xpfilt.verify.fuzz.report import Progress, Recorder, replay_command
from xpfilt.verify.fuzz.rtl import Segment, group_readouts, run_stream

__all__ = [
    "EngineSet",
    "fuzz_wellformed",
    "fuzz_hostile",
    "fuzz_config",
    "fuzz_rtl",
    "fuzz_scanner",
    "ENGINE_FACTORIES",
]

HOSTILE_QUERIES = ["/:a", "//a:b:c", "/x:a"]


# --- engines for one query set ----------------------------------------------------------------


def _readout(rng: random.Random, cls) -> dict:
    """``{"readout": kind}`` when ``cls`` (CompileOptions or HardwareSpec) has a choice of
    match readouts, a random one; else nothing."""
    if "readout" in {f.name for f in dataclasses.fields(cls)}:
        return {"readout": rng.choice(("serial", "sparse"))}
    return {}


def _options_args(options: CompileOptions) -> str:
    args = f" --max-depth {options.max_depth}"
    if getattr(options, "readout", "serial") != "serial":
        args += f" --readout {options.readout}"
    if options.cluster_size:
        args += f" --cluster-size {options.cluster_size}"
    for flag, on in (
        ("--no-opt1", options.opt_last),
        ("--no-opt2", options.opt_root),
        ("--no-opt3", options.opt_share),
        ("--no-prefix-sharing", options.prefix_sharing),
        ("--file-order", options.prefix_clustering),
    ):
        if not on:
            args += " " + flag
    return args


def _build_model(queries, setting):
    return ModelEngine(queries, setting)


def _build_programmable(queries, setting):
    return ProgrammableModelEngine(queries, setting)


def _registered(name: str) -> Callable:
    def build(queries, setting):
        from xpfilt.engines import make_engine

        return make_engine(name, queries)

    return build


def _engine_factories() -> dict[str, tuple[Callable, bool]]:
    """Engine name -> (factory(queries, setting), takes only path queries): lxml, the two
    models, and any other engine registered in :data:`xpfilt.engines.ENGINES`."""
    from xpfilt.engines import ENGINES, split_supported

    out = {
        "lxml": (lambda queries, setting: LxmlFilter(queries), False),
        "model": (_build_model, True),
        "programmable": (_build_programmable, True),
    }
    probe = [parse_query("/a[@id=1]", 1)]
    for name in ENGINES:
        if name not in out and name != "reference":
            out[name] = (_registered(name), not split_supported(name, probe)[0])
    return out


ENGINE_FACTORIES = _engine_factories()
DEFAULT_ENGINES = tuple(ENGINE_FACTORIES)


@dataclass
class _Slot:
    name: str
    queries: list
    setting: object
    engine: object = None
    build_error: Optional[Outcome] = None
    numbers: list = field(default_factory=list)
    scope: frozenset = frozenset()  # query numbers this engine answers for
    previous: Optional[bytes] = None  # the document it filtered before (state carries over)
    factory: Callable = None

    def build(self) -> None:
        self.previous = None
        try:
            self.engine = self.factory(self.queries, self.setting)
            self.build_error = None
        except Exception as exc:  # noqa: BLE001 -- a crash while building the engine
            self.engine = None
            self.build_error = Outcome("crash", error=str(exc)[:300], exc_type=type(exc).__name__)
            return
        self.numbers = [q.number for q in self.queries]
        if isinstance(self.engine, ProgrammableModelEngine):
            self.scope = frozenset(self.engine.configuration.answers)
        else:
            self.scope = frozenset(self.numbers)


class EngineSet:
    """The reference and the other engines for one query set (``texts``, numbered from 1)."""

    def __init__(
        self,
        texts: list[str],
        engines: list[str],
        rng: random.Random,
        factories: Optional[dict] = None,
    ):
        self.texts = texts
        # a query outside the fragment is the parser's business (reported by line): left out
        self.queries = list(load_queries(texts).queries)
        self.reference = ReferenceFilter(self.queries)
        self.ref_numbers = [q.number for q in self.queries]
        paths = [q for q in self.queries if q.is_structural]
        factories = factories or ENGINE_FACTORIES
        self.max_depth = {}
        self.max_name = {}
        self.slots: list[_Slot] = []
        for name in engines:
            factory, paths_only = factories[name]
            qs = paths if paths_only else list(self.queries)
            if paths_only and not qs:
                continue
            setting = None
            if name == "model":
                setting = CompileOptions(
                    cluster_size=rng.choice((None, None, 1, 2, 3, 5)),
                    max_depth=rng.choice((16, 16, 10, 8, 5)),
                    opt_last=rng.random() < 0.8,
                    opt_root=rng.random() < 0.8,
                    opt_share=rng.random() < 0.8,
                    prefix_sharing=rng.random() < 0.8,
                    **_readout(rng, CompileOptions),
                )
                self.max_depth[name], self.max_name[name] = setting.max_depth, 32
            elif name == "programmable":
                tag_len = rng.choice((1, 2, 3, 4, 8))
                setting = HardwareSpec(
                    clusters=rng.randint(1, 3),
                    columns=rng.choice((2, 4, 8, 16, 32)),
                    max_tag_len=tag_len,
                    max_depth=rng.choice((16, 10, 8, 5)),
                    max_name=max(tag_len, rng.choice((8, 16, 32))),
                    **_readout(rng, HardwareSpec),
                )
                self.max_depth[name], self.max_name[name] = setting.max_depth, setting.max_name
            slot = _Slot(name, qs, setting, factory=factory)
            slot.build()
            self.slots.append(slot)

    def replay_files(self, slot: _Slot, data: bytes) -> tuple[dict, str]:
        files = {"queries.txt": ("\n".join(self.texts) + "\n").encode()}
        names = []
        if slot.previous is not None and slot.name in ("model", "programmable"):
            files["1-previous.xml"] = slot.previous
            names.append("1-previous.xml")
        files["2-case.xml"] = data
        names.append("2-case.xml")
        extra = ""
        if slot.name == "model":
            extra = _options_args(slot.setting)
        if slot.name == "programmable":
            files["hardware.json"] = slot.setting.to_json().encode()
        command = replay_command(slot.name, names, extra)
        command += " ; xpfilt filter -q queries.txt --engine reference 2-case.xml"
        return files, command


def compare_document(
    category: str, es: EngineSet, data: bytes, rec: Recorder, timeout: float, note: str = ""
) -> bool:
    """Run ``data`` through the reference and every engine of ``es``; count and classify.
    Returns True when the case failed."""
    document = Document("case.xml", data)
    try:  # what the engines saw: the classification looks at these bytes
        transcoded = utf8_document(document).data
    except Exception:  # noqa: BLE001
        transcoded = data
    failed = False
    ref = run_engine(es.reference, document, timeout)
    if ref.kind in ("crash", "hang"):
        files = {"queries.txt": ("\n".join(es.texts) + "\n").encode(), "2-case.xml": data}
        rec.fail(
            category,
            f"{ref.kind} reference: {ref.exc_type}: {signature(ref.error)}",
            f"{note}\nreference: {ref.short()}",
            files,
            "xpfilt filter -q queries.txt --engine reference 2-case.xml",
        )
        es.reference = ReferenceFilter(es.queries)
        failed = True
    for slot in es.slots:
        if slot.engine is None and slot.build_error is None:
            slot.build()
        if slot.build_error is not None:
            out = slot.build_error
        else:
            out = run_engine(slot.engine, document, timeout)
        rec.check(category, f"{slot.name} vs reference")
        if out.kind in ("crash", "hang"):
            files, command = es.replay_files(slot, data)
            rec.fail(
                category,
                f"{out.kind} {slot.name}: {out.exc_type}: {signature(out.error)}",
                f"{note}\n{slot.name}: {out.short()}\nreference: {ref.short()}",
                files,
                command,
            )
            failed = True
            if slot.build_error is None:
                slot.build()  # a crashed engine may be left in any state
            continue
        if ref.kind not in ("answer", "flag"):
            slot.previous = data
            continue
        if out.kind == ref.kind == "flag":
            pass
        elif out.kind == ref.kind == "answer" and out.answer == ref.answer & slot.scope:
            pass
        else:
            documented, klass = classify(
                slot.name,
                transcoded,
                ref,
                out,
                max_depth=es.max_depth.get(slot.name, 0),
                max_name=es.max_name.get(slot.name, 0),
            )
            if documented:
                assert klass in DOCUMENTED, klass
                rec.documented(category, klass)
            else:
                kind = "disagreement" if out.kind == ref.kind else "flag disagreement"
                files, command = es.replay_files(slot, data)
                expected = (
                    f"reference restricted to this engine's queries: "
                    f"{sorted(ref.answer & slot.scope)}"
                    if ref.kind == "answer"
                    else ""
                )
                rec.fail(
                    category,
                    f"{kind}: {klass}",
                    f"{note}\n{slot.name}: {out.short()}\nreference: {ref.short()}\n{expected}",
                    files,
                    command,
                )
                failed = True
        slot.previous = data
    return failed


# --- category 1 -------------------------------------------------------------------------------


@contextmanager
def _category(rec: Recorder, cat: str, label: str, total: int, progress: bool):
    """Time category ``cat`` into ``rec`` and yield ``update(done)`` for its progress bar
    (none without ``progress``); the bar closes at the last count given."""
    start = time.perf_counter()
    bar = Progress(label, total, rec, cat) if progress else None
    done = 0

    def update(n: int) -> None:
        nonlocal done
        done = n
        if bar:
            bar.update(n)

    yield update
    if bar:
        bar.done(done)
    rec.categories[cat].seconds += time.perf_counter() - start


def _document_cases(
    cat: str,
    cases: int,
    rec: Recorder,
    update: Callable,
    timeout: float,
    docs_per_set: int,
    new_set: Callable,
    new_document: Callable,
) -> None:
    """The loop of categories 1 and 2: an engine set from ``new_set()`` every ``docs_per_set``
    cases; each case one document from ``new_document(es)`` -> (bytes, mutation kind or None),
    compared across the set's engines."""
    done = 0
    while done < cases:
        es = new_set()
        for _ in range(min(docs_per_set, cases - done)):
            data, kind = new_document(es)
            rec.case(cat)
            if kind is not None:
                rec.check(cat, f"kind {kind}")
            if compare_document(
                cat, es, data, rec, timeout, note="" if kind is None else f"mutation: {kind}"
            ):
                rec.failed_case(cat)
            done += 1
        update(done)


def fuzz_wellformed(
    rng: random.Random,
    cases: int,
    rec: Recorder,
    *,
    timeout: float = 10.0,
    docs_per_set: int = 5,
    engines=DEFAULT_ENGINES,
    factories=None,
    progress: bool = True,
) -> None:
    """Random well-formed documents against random query sets: every engine vs the reference
    (path query sets), the reference vs lxml (query sets with value predicates too)."""

    def new_set() -> EngineSet:
        predicates = rng.random() < 0.4
        return EngineSet(gen.random_queries(rng, predicates), list(engines), rng, factories)

    with _category(rec, "wellformed", "1 well-formed", cases, progress) as update:
        _document_cases(
            "wellformed",
            cases,
            rec,
            update,
            timeout,
            docs_per_set,
            new_set,
            lambda es: (gen.random_document(rng), None),
        )


# --- category 2 -------------------------------------------------------------------------------


def fuzz_hostile(
    rng: random.Random,
    cases: int,
    rec: Recorder,
    *,
    timeout: float = 10.0,
    docs_per_set: int = 20,
    engines=DEFAULT_ENGINES,
    factories=None,
    progress: bool = True,
) -> None:
    """Mutated and hostile documents through every engine: crashes, hangs, disagreements and
    flag disagreements, each classified against the documented differences."""

    def new_set() -> EngineSet:
        texts = gen.random_queries(rng, predicates=rng.random() < 0.3)
        if rng.random() < 0.03:
            texts.append(rng.choice(HOSTILE_QUERIES))
        return EngineSet(texts, list(engines), rng, factories)

    def new_document(es: EngineSet) -> tuple[bytes, str]:
        depth = min(es.max_depth.values(), default=16)
        name = min(es.max_name.values(), default=32)
        kind, data = gen.hostile_document(rng, gen.random_document(rng), depth, name)
        return data, kind

    with _category(rec, "hostile", "2 hostile", cases, progress) as update:
        _document_cases("hostile", cases, rec, update, timeout, docs_per_set, new_set, new_document)


# --- category 5 -------------------------------------------------------------------------------


def _expat_accepts(data: bytes) -> bool:
    """Expat's verdict on ``data`` as the fast engine's expat path parses it."""
    from xml.parsers import expat

    from xpfilt.software.events import DocumentError

    try:
        parser = expat.ParserCreate()
        parser.Parse(utf8_document(Document("case.xml", data)).data, True)
    except (expat.ExpatError, DocumentError):
        return False
    return True


def fuzz_scanner(
    rng: random.Random,
    cases: int,
    rec: Recorder,
    *,
    docs_per_set: int = 50,
    progress: bool = True,
) -> None:
    """The fast engine's compiled scanner against expat on mutated documents: a document it
    accepts, expat must accept, and its answer must be the reference's; one it defers goes to
    expat (counted, by expat's verdict: the scanner's coverage). Half the query sets have
    predicates: the loop's two-pass scanner (``scan_tree``) judges those documents."""
    from xpfilt.software.fast import FastFilter

    done = 0
    with _category(rec, "scanner", "5 scanner", cases, progress) as update:
        while done < cases:
            predicates = rng.random() < 0.5
            texts = gen.random_queries(rng, predicates)
            queries = list(load_queries(texts).queries)
            engine, reference = FastFilter(queries), ReferenceFilter(queries)
            if engine.stats["engine"] != "compiled":
                if predicates:  # position() or a nested path's predicates: the Python path
                    continue
                rec.check("scanner", "no compiled loop")  # Numba missing: nothing to compare
                return
            rec.check("scanner", "query set with predicates" if predicates else "paths only")
            batch = [gen.scanner_document(rng) for _ in range(min(docs_per_set, cases - done))]
            verdicts = engine.compiled_verdicts([data for _, data in batch])
            answers = engine.filter_many([data for _, data in batch])
            for (kind, data), accepted, found in zip(batch, verdicts, answers):
                rec.case("scanner")
                rec.check("scanner", f"kind {kind}")
                expat_ok = _expat_accepts(data)
                verdict = "accepted" if accepted else "deferred"
                rec.check("scanner", f"{verdict}, expat {'accepts' if expat_ok else 'rejects'}")
                files = {"queries.txt": ("\n".join(texts) + "\n").encode(), "2-case.xml": data}
                command = replay_command("fast", ["2-case.xml"])
                if accepted and not expat_ok:
                    rec.fail(
                        "scanner",
                        "the scanner accepted a document expat rejects",
                        f"mutation: {kind}",
                        files,
                        command,
                    )
                    rec.failed_case("scanner")
                elif accepted:
                    expected = sorted(reference.filter(Document("case.xml", data)))
                    if found.tolist() != expected:
                        rec.fail(
                            "scanner",
                            "disagreement: compiled answer vs reference",
                            f"mutation: {kind}\nfast: {found.tolist()}\nreference: {expected}",
                            files,
                            command,
                        )
                        rec.failed_case("scanner")
                done += 1
            update(done)


# --- category 3 -------------------------------------------------------------------------------


def _random_spec(rng: random.Random) -> HardwareSpec:
    tag_len = rng.choice((1, 2, 3, 4))
    return HardwareSpec(
        clusters=rng.randint(1, 3),
        columns=rng.choice((2, 4, 6, 8)),
        max_tag_len=tag_len,
        max_depth=rng.randint(3, 8),
        max_name=max(tag_len, rng.choice((4, 8, 16))),
        **_readout(rng, HardwareSpec),
    )


def _fitting_queries(rng: random.Random, spec: HardwareSpec) -> list[str]:
    texts = [
        t
        for t in gen.random_queries(rng)
        if all(len(s) <= spec.max_tag_len for s in t.replace("//", "/").split("/")[1:])
    ]
    return texts or ["//*"]


def _doc_within(rng: random.Random, spec_depth: int) -> bytes:
    return gen.random_document(rng, max_depth=max(1, spec_depth), fanout=2)


def _expected_bits(texts: list[str], configuration, document: bytes) -> int:
    """The readout bits of the configured queries that the reference says match."""
    queries = [parse_query(t, i + 1) for i, t in enumerate(texts)]
    hits = ReferenceFilter(queries).filter(document)
    bits = 0
    for p in hits:
        bit = configuration.readout_bit.get(queries[p].number)
        if bit is not None:
            bits |= 1 << bit
    return bits


def _mask(configuration) -> int:
    """Readout bits that are queries' answers (the other columns' flags are read out too)."""
    return sum(1 << bit for bit in set(configuration.readout_bit.values()))


def _config_files(spec, texts_a, texts_b, stream_a, bad, docs, stream_b=b"") -> dict:
    files = {
        "hardware.json": spec.to_json().encode(),
        "case.json": b'{"kind": "config"}',
        "config-b.bin": stream_b,
        "queries-a.txt": ("\n".join(texts_a) + "\n").encode(),
        "queries-b.txt": ("\n".join(texts_b) + "\n").encode(),
        "config-a.bin": stream_a,
        "config-bad.bin": bad,
    }
    for i, d in enumerate(docs):
        files[f"doc{i}.xml"] = d
    return files


def fuzz_config(
    rng: random.Random,
    cases: int,
    rec: Recorder,
    *,
    progress: bool = True,
    loader: Callable = load_configuration,
) -> None:
    """Corrupted configuration streams into the programmable model: each must be rejected and
    leave the active configuration answering exactly as before; the untouched stream of the
    next set must then be accepted and answer as the reference. Also streams that complete
    while documents flow: every document must be answered by exactly one configuration."""
    cat = "config"
    with _category(rec, cat, "3 configuration", cases, progress) as update:
        _config_cases(rng, cases, rec, cat, loader, update)


def _config_cases(
    rng: random.Random, cases: int, rec: Recorder, cat: str, loader: Callable, update: Callable
) -> None:
    done = 0
    while done < cases:
        spec = _random_spec(rng)
        foreign = [
            configure(
                [parse_query("//a", 1)],
                HardwareSpec(
                    clusters=spec.clusters,
                    columns=spec.columns + 2,
                    max_tag_len=spec.max_tag_len,
                    max_depth=spec.max_depth,
                    max_name=spec.max_name,
                ),
            ).stream(),
            configure(
                [parse_query("//a", 1)],
                HardwareSpec(
                    clusters=spec.clusters,
                    columns=spec.columns,
                    max_tag_len=spec.max_tag_len,
                    max_depth=spec.max_depth + 1,
                    max_name=spec.max_name,
                ),
            ).stream(),
        ]
        model = ProgrammableModel(spec)
        texts = _fitting_queries(rng, spec)
        config = configure([parse_query(t, i + 1) for i, t in enumerate(texts)], spec)
        loader(model, config.stream())
        docs = [_doc_within(rng, spec.max_depth) for _ in range(3)]
        generation = model.status["generation"]
        if model.status["rejected"] or not model.status["loaded"]:
            rec.fail(
                cat,
                "an untouched stream was rejected",
                f"status {model.status}",
                _config_files(
                    spec, texts, texts, config.stream(), config.stream(), docs, config.stream()
                ),
                "python -m xpfilt.verify.fuzz --replay .",
            )
        for _ in range(min(10, cases - done)):
            rec.case(cat)
            failed = False
            from xpfilt.model.custom import run_documents

            before = [r.bits for r in run_documents(model, docs)]
            texts_b = _fitting_queries(rng, spec)
            config_b = configure([parse_query(t, i + 1) for i, t in enumerate(texts_b)], spec)
            kind, bad = gen.mutate_stream(rng, config_b.stream(), config.stream(), foreign)
            loader(model, bad)
            rec.check(cat, f"corrupted ({kind})")
            status = model.status
            files = _config_files(
                spec, texts, texts_b, config.stream(), bad, docs, config_b.stream()
            )
            replay = "python -m xpfilt.verify.fuzz --replay ."
            if not status["rejected"] or status["generation"] != generation:
                rec.fail(
                    cat,
                    f"corrupted stream accepted ({kind})",
                    f"status after the corrupted stream: {status}",
                    files,
                    replay,
                )
                failed = True
            after = [r.bits for r in run_documents(model, docs)]
            if after != before:
                rec.fail(
                    cat,
                    f"previous configuration changed by a rejected stream ({kind})",
                    f"readout bits before {before}, after {after}",
                    files,
                    replay,
                )
                failed = True
            # the untouched stream of set B: accepted, answers as the reference
            rec.check(cat, "untouched")
            loader(model, config_b.stream())
            status = model.status
            if status["rejected"] or status["generation"] != (generation + 1) & 0xFF:
                rec.fail(
                    cat,
                    "an untouched stream was rejected after a corrupted one",
                    f"status {status}",
                    files,
                    replay,
                )
                failed = True
            got = [r.bits & _mask(config_b) for r in run_documents(model, docs)]
            want = [_expected_bits(texts_b, config_b, d) for d in docs]
            if got != want:
                rec.fail(
                    cat,
                    "a loaded configuration answers differently from the reference",
                    f"readout bits {got}, reference {want}",
                    files,
                    replay,
                )
                failed = True
            generation = status["generation"]
            texts, config = texts_b, config_b
            if rng.random() < 0.5:
                rec.check(cat, "commit while documents stream (model)")
                failed |= _concurrent_commit(rng, spec, rec, cat, rtl=False)
            if failed:
                rec.failed_case(cat)
            done += 1
        update(done)


# --- commits and documents at once, and category 4 ---------------------------------------------


def _check_readouts(
    cat: str,
    kind: str,
    design,
    segments: list[Segment],
    run,
    rec: Recorder,
    expect: list,
    note: str,
    files: dict,
    rtl: bool,
    config_of_doc: Optional[list] = None,
) -> bool:
    """Count readouts per document and check each one: ``expect[i]`` is ("bits", value) for a
    well-formed document within limits, ("flag",) for one that must be flagged, ("any",) else;
    for a programmable engine, ``config_of_doc[i]`` lists the acceptable (old, new) answers."""
    width = design.readout_width if kind == "programmable" else len(design.query_numbers)
    ndocs = sum(len(s.documents) for s in segments)
    failed = False
    replay = "python -m xpfilt.verify.fuzz --replay ."
    sides = [("model", run.model_beats)] + ([("RTL", run.rtl_beats)] if rtl else [])
    if run.mismatch is not None:
        rec.fail(
            cat,
            f"RTL and model differ ({kind}"
            f"{', max_tag_len=1' if kind == 'programmable' and design.max_tag_len == 1 else ''})",
            f"{note}\nfirst difference at cycle {run.mismatch['cycle']}: "
            f"RTL {run.mismatch['rtl']}, model {run.mismatch['model']}",
            files,
            replay,
        )
        failed = True
    if run.timed_out:
        rec.fail(cat, f"stream did not finish ({kind})", note, files, replay)
        failed = True
    for side, beats in sides:
        readouts, framing = group_readouts(beats, width)
        rec.check(cat, "readouts counted")
        if framing:
            rec.fail(
                cat,
                f"readout framing broken ({side}, {kind})",
                f"{note}\n{framing} beats outside first/last framing",
                files,
                replay,
            )
            failed = True
        if len(readouts) != ndocs:
            rec.fail(
                cat,
                f"lost readouts ({side}, {kind})"
                if len(readouts) < ndocs
                else f"extra readouts ({side}, {kind})",
                f"{note}\n{ndocs} documents sent, {len(readouts)} readouts",
                files,
                replay,
            )
            failed = True
        if [d for d, _, _ in readouts] != [i & 0xFFFF for i in range(len(readouts))]:
            rec.fail(
                cat,
                f"readouts out of order ({side}, {kind})",
                f"{note}\ndocument numbers {[d for d, _, _ in readouts][:40]}",
                files,
                replay,
            )
            failed = True
        if len(readouts) != ndocs or side == "RTL" and run.mismatch is not None:
            continue  # answers cannot be matched to documents, or the difference is reported
        for i, (_, errors, bits) in enumerate(readouts):
            want = expect[i]
            if want[0] == "flag" and not errors:
                rec.fail(
                    cat,
                    f"a 1-3 byte document was not flagged ({side}, {kind})",
                    f"{note}\ndocument {i}: {segments_doc(segments, i)!r}",
                    files,
                    replay,
                )
                failed = True
            elif want[0] == "bits":
                if config_of_doc is None:
                    if errors or bits != want[1]:
                        rec.fail(
                            cat,
                            f"wrong answer ({side}, {kind})",
                            f"{note}\ndocument {i}: errors {errors}, bits {bits:#x}, "
                            f"reference {want[1]:#x}",
                            files,
                            replay,
                        )
                        failed = True
                    continue
                (must, must_mask), (other, other_mask), either = config_of_doc[i]
                is_must = bits & must_mask == must
                is_other = bits & other_mask == other
                if errors or not (is_must or either and is_other):
                    klass = (
                        "a well-formed document was flagged"
                        if errors
                        else "configuration applied to the wrong document"
                        if is_other
                        else "configuration mixed within a document"
                    )
                    rec.fail(
                        cat,
                        f"{klass} ({side}, {kind})",
                        f"{note}\ndocument {i}: errors {errors}, bits {bits:#x}, expected "
                        f"{must:#x} under mask {must_mask:#x} (the other configuration: "
                        f"{other:#x} under {other_mask:#x})",
                        files,
                        replay,
                    )
                    failed = True
    return failed


def segments_doc(segments, i):
    for s in segments:
        if i < len(s.documents):
            return s.documents[i]
        i -= len(s.documents)
    return None


def _stream_docs(rng: random.Random, n: int, depth: int, name: int) -> tuple[list, list]:
    """Back-to-back documents: short (1-3 bytes), malformed and normal; (docs, kinds)."""
    docs, kinds = [], []
    for _ in range(n):
        r = rng.random()
        if r < 0.35:
            docs.append(gen.short_document(rng))
            kinds.append("short")
        elif r < 0.55:
            kind, d = gen.hostile_document(rng, gen.random_document(rng, 3, 2), depth, name)
            if not d or len(d) > 300:
                d = d[:300] or b"<"
            docs.append(d)
            kinds.append("malformed")
        else:
            docs.append(gen.random_document(rng, max_depth=max(1, depth), fanout=2))
            kinds.append("normal")
    return docs, kinds


def _custom_expect(texts, plan, docs, kinds) -> list:
    queries = [parse_query(t, i + 1) for i, t in enumerate(texts)]
    ref = ReferenceFilter(queries)
    position = {q.number: i for i, q in enumerate(queries)}
    out = []
    for d, k in zip(docs, kinds):
        if k == "short":
            out.append(("flag",))
        elif k == "normal":
            hits = ref.filter(d)
            out.append(
                (
                    "bits",
                    sum(1 << b for b, n in enumerate(plan.query_numbers) if position[n] in hits),
                )
            )
        else:
            out.append(("any",))
    return out


def _rtl_files(texts_list, design, segments, meta) -> dict:
    import json

    files = {}
    for i, texts in enumerate(texts_list):
        files[f"queries-{i}.txt"] = ("\n".join(texts) + "\n").encode()
    k = 0
    for s, seg in enumerate(segments):
        for d in seg.documents:
            files[f"doc{k:03d}.xml"] = d
            k += 1
        if seg.config:
            files[f"config-{s}.bin"] = seg.config
    if isinstance(design, HardwareSpec):
        files["hardware.json"] = design.to_json().encode()
    else:
        files["plan.json"] = design.to_json().encode()
    files["case.json"] = json.dumps(meta, indent=1).encode()
    return files


def _concurrent_commit(
    rng: random.Random,
    spec: HardwareSpec,
    rec: Recorder,
    cat: str,
    *,
    rtl: bool,
    p: Optional[tuple] = None,
    seed: Optional[int] = None,
) -> bool:
    """Configuration A loaded; then configuration B (or a corrupted B) streams while short and
    normal documents go back to back; every document must be answered entirely by the
    configuration in force when its first byte went in."""
    texts_a, texts_b = _fitting_queries(rng, spec), _fitting_queries(rng, spec)
    ca = configure([parse_query(t, i + 1) for i, t in enumerate(texts_a)], spec)
    cb = configure([parse_query(t, i + 1) for i, t in enumerate(texts_b)], spec)
    corrupt = rng.random() < 0.25
    stream_b = gen.mutate_stream(rng, cb.stream(), ca.stream(), [])[1] if corrupt else cb.stream()
    docs1, kinds1 = _stream_docs(rng, rng.randint(0, 3), spec.max_depth, spec.max_name)
    docs2, kinds2 = _stream_docs(rng, rng.randint(2, 10), spec.max_depth, spec.max_name)
    if rng.random() < 0.7:  # line the stream's end up with the first document's end
        delay = max(0, len(stream_b) * 8 - rng.randint(-2, 6) - len(docs2[0]))
    else:
        delay = rng.randint(0, len(stream_b) * 8)
    segments = [
        Segment(config=ca.stream()),
        Segment(documents=docs1),
        Segment(documents=docs2, config=stream_b, doc_delay=delay),
    ]
    docs, kinds = docs1 + docs2, kinds1 + kinds2
    p_valid, p_ready = p or (rng.choice((1.0, 1.0, 0.9, 0.5)), rng.choice((1.0, 0.9, 0.5)))
    seed = rng.randrange(1 << 30) if seed is None else seed
    try:
        run = run_stream(
            "programmable", spec, segments, seed=seed, p_valid=p_valid, p_ready=p_ready, rtl=rtl
        )
    except Exception as exc:  # noqa: BLE001 -- the RTL or the model crashed: count it
        return _stream_crash(
            rec,
            cat,
            "programmable",
            rtl,
            exc,
            files_of=lambda: _rtl_files(
                [texts_a, texts_b],
                spec,
                segments,
                {
                    "kind": "programmable",
                    "seed": seed,
                    "p_valid": p_valid,
                    "p_ready": p_ready,
                    "rtl": rtl,
                    "segments": [
                        [len(s.documents), s.config is not None, s.doc_delay] for s in segments
                    ],
                },
            ),
        )
    expect, configs = [], []
    switch = run.config_end[1] if len(run.config_end) > 1 and not corrupt else None
    starts = run.doc_start
    for i, (d, k) in enumerate(zip(docs, kinds)):
        if k == "short":
            expect.append(("flag",))
            configs.append(((0, 0), (0, 0), False))
            continue
        if k != "normal":
            expect.append(("any",))
            configs.append(((0, 0), (0, 0), False))
            continue
        old = (_expected_bits(texts_a, ca, d), _mask(ca))
        new = (_expected_bits(texts_b, cb, d), _mask(cb))
        expect.append(("bits", old[0]))
        started = starts[i] if i < len(starts) else -1
        if switch is not None and started == switch:  # same cycle: either is right
            configs.append((old, new, True))
        elif switch is not None and started > switch:
            configs.append((new, old, False))
        else:
            configs.append((old, new, False))
    meta = {
        "kind": "programmable",
        "seed": seed,
        "p_valid": p_valid,
        "p_ready": p_ready,
        "rtl": rtl,
        "corrupt_b": corrupt,
        "doc_delay": delay,
        "segments": [[len(s.documents), s.config is not None, s.doc_delay] for s in segments],
    }
    files = _rtl_files([texts_a, texts_b], spec, segments, meta)
    note = (
        f"programmable {spec}; configuration B {'corrupted' if corrupt else 'valid'} "
        f"streams while {len(docs2)} documents go back to back (p_valid {p_valid}, "
        f"p_ready {p_ready}); kinds {kinds}"
    )
    return _check_readouts(
        cat, "programmable", spec, segments, run, rec, expect, note, files, rtl, configs
    )


def _stream_crash(
    rec: Recorder, cat: str, kind: str, rtl: bool, exc: Exception, files_of: Callable
) -> bool:
    import traceback

    where = "RTL or model" if rtl else "model"
    rec.fail(
        cat,
        f"crash {kind} {where}: {type(exc).__name__}: {signature(str(exc))}",
        "".join(traceback.format_exception(exc))[-3000:],
        files_of(),
        "python -m xpfilt.verify.fuzz --replay .",
    )
    return True


def fuzz_rtl(rng: random.Random, streams: int, rec: Recorder, *, progress: bool = True) -> None:
    """Back-to-back short, malformed and normal documents through the RTL and its model with
    random valid/ready: cycle-exact, one readout per document, answers as the reference."""
    cat = "rtl"
    with _category(rec, cat, "4 RTL streams", streams, progress) as update:
        for n in range(streams):
            rec.case(cat)
            if n == 0:  # issue 11's reproduction first: <a/>, five 1-byte documents, ...
                failed = _custom_stream(
                    rng,
                    rec,
                    cat,
                    texts=["//a", "//b"],
                    docs=([b"<a/>"] + [b"x"] * 5) * 10 + [b"<b/>"],
                    p=(1.0, 1.0),
                )
            elif n % 3 != 2:
                failed = _custom_stream(rng, rec, cat)
            else:
                spec = _random_spec(rng)
                rec.check(
                    cat, f"programmable streams, {getattr(spec, 'readout', 'serial')} readout"
                )
                failed = _concurrent_commit(rng, spec, rec, cat, rtl=True)
            if failed:
                rec.failed_case(cat)
            update(n + 1)


def _custom_stream(
    rng: random.Random, rec: Recorder, cat: str, texts=None, docs=None, p=None
) -> bool:
    texts = texts or gen.random_queries(rng, most=8)
    queries = [parse_query(t, i + 1) for i, t in enumerate(texts)]
    options = CompileOptions(
        cluster_size=rng.choice((None, 1, 2, 3)),
        max_depth=rng.randint(2, 8),
        opt_last=rng.random() < 0.8,
        opt_root=rng.random() < 0.8,
        opt_share=rng.random() < 0.8,
        prefix_sharing=rng.random() < 0.8,
        **_readout(rng, CompileOptions),
    )
    plan = compile_queries(queries, options)
    if docs is None:
        docs, kinds = _stream_docs(rng, rng.randint(3, 24), options.max_depth, 32)
    else:
        kinds = ["short" if len(d) < 4 else "normal" for d in docs]
    segments = [Segment(documents=docs)]
    p_valid, p_ready = p or (
        rng.choice((1.0, 1.0, 0.9, 0.5, 0.2)),
        rng.choice((1.0, 1.0, 0.9, 0.5, 0.2)),
    )
    seed = rng.randrange(1 << 30)
    rec.check(cat, f"custom streams, {getattr(options, 'readout', 'serial')} readout")
    meta = {
        "kind": "custom",
        "seed": seed,
        "p_valid": p_valid,
        "p_ready": p_ready,
        "rtl": True,
        "segments": [[len(docs), False, 0]],
    }
    try:
        run = run_stream("custom", plan, segments, seed=seed, p_valid=p_valid, p_ready=p_ready)
    except Exception as exc:  # noqa: BLE001 -- the RTL or the model crashed: count it
        return _stream_crash(
            rec,
            cat,
            "custom",
            True,
            exc,
            files_of=lambda: _rtl_files([texts], plan, segments, meta),
        )
    expect = _custom_expect(texts, plan, docs, kinds)
    files = _rtl_files([texts], plan, segments, meta)
    note = (
        f"custom engine, {len(texts)} queries, {options}; {len(docs)} documents back to "
        f"back (p_valid {p_valid}, p_ready {p_ready}); kinds {kinds}"
    )
    return _check_readouts(cat, "custom", plan, segments, run, rec, expect, note, files, True)
