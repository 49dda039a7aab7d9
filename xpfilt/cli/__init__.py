"""The ``xpfilt`` command line: workloads, filtering, compiling and configuring hardware,
regressions, sweeps and reports; the board commands (build, host, sim-board) are in
:mod:`xpfilt.boards.cli`; the options and helpers several commands share in
:mod:`xpfilt.cli.options`."""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path

import click

from xpfilt import __version__
from xpfilt.cli.options import (
    ByteSize,
    DocumentPath,
    bytes_per_cycle_option,
    compile_options,
    document_paths,
    load_hardware,
    mode_option,
    options_from,
    probability,
    read_hardware_queries,
    read_queries,
    refuse_wide_programmable,
    spec_from_options,
)
from xpfilt.compiler.options import EngineMode


class CommandFailed(click.ClickException):
    """A failed command: shown as its one line, exit code 1."""

    def show(self, file=None):
        click.echo(self.format_message(), err=True, file=file)


def _describe(error: Exception) -> str:
    """One line saying what failed and why, from an error a command let through."""
    if isinstance(error, click.ClickException):
        message = error.format_message()
    elif isinstance(error, OSError) and error.filename is not None:
        message = f"{error.filename}: {error.strerror or error}"
    elif isinstance(error, MemoryError):
        message = "out of memory: the input asks for more than this machine has"
    elif isinstance(error, (ValueError, OSError)) and str(error):
        message = str(error)  # the project's errors say what and why
    else:
        message = (
            f"internal error: {type(error).__name__}: {error} (rerun with --debug for "
            "the traceback)"
        )
    lines = [line.strip() for line in message.splitlines() if line.strip(" ^\t")]
    return "; ".join(lines)


def _quiet_unused_designs() -> None:
    """A command that stops half-way leaves Amaranth components it never elaborated; their
    warnings at exit would bury the one line that says what went wrong."""
    if "amaranth" in sys.modules:
        import warnings

        from amaranth.hdl import UnusedElaboratable

        warnings.simplefilter("ignore", UnusedElaboratable)


class _Main(click.Group):
    """The ``xpfilt`` group: a command that fails on its input ends with one line, ``xpfilt
    COMMAND: what: why``, and exit code 1; ``--debug`` shows the traceback instead. The board
    commands live with the rest of the board feature (:mod:`xpfilt.boards.cli`), loaded when named."""

    BOARD_COMMANDS = {
        "build": "build_command",
        "host": "host_command",
        "sim-board": "sim_board_command",
    }

    def list_commands(self, ctx):
        return sorted([*super().list_commands(ctx), *self.BOARD_COMMANDS])

    def get_command(self, ctx, name):
        if name in self.BOARD_COMMANDS:
            import xpfilt.boards.cli

            return getattr(xpfilt.boards.cli, self.BOARD_COMMANDS[name])
        return super().get_command(ctx, name)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.Abort, click.UsageError):
            raise
        except BrokenPipeError:
            # the reader went away (`xpfilt filter ... | head`): stop quietly, as Unix tools
            # do; stdout goes to /dev/null so that the interpreter's last flush cannot fail
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(0)
        except Exception as error:
            if ctx.params.get("debug"):
                raise
            _quiet_unused_designs()
            raise CommandFailed(f"xpfilt {ctx.invoked_subcommand}: {_describe(error)}") from None


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="xpfilt")
@click.option(
    "--debug", is_flag=True, help="On a failure, show the Python traceback instead of one line."
)
def main(debug):
    """xpfilt: filter XML document streams against thousands of XPath profiles, in FPGA
    hardware generated from the profiles, with a reference filter to prove it right.

    Start with `xpfilt filter --help`.
    """
    # No command does linear algebra: one OpenBLAS thread. Its default pool (a thread per core,
    # spinning a while when NumPy loads) cost 45 ms of CPU, 70 ms of wall time on 2 cores, of
    # every run (numpy is imported by the commands, after this). The user's setting wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


@main.command("filter")
@click.option(
    "-q",
    "--queries",
    "queries_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Query file: one XPath per line; query number = line number.",
)
@click.option(
    "-e",
    "--engine",
    default="fast",
    show_default=True,
    type=click.Choice(["fast", "reference", "lxml", "model"]),
    help="fast: one shared NFA over all queries run as a lazy DFA (YFilter's "
    "design), the fastest in software; "
    "reference: the paper's stack algorithm in software (the oracle); "
    "lxml: libxml2 evaluating each query separately; "
    "model: the cycle-accurate model of the generated custom hardware.",
)
@mode_option(show_default=True, help="Which hardware the model engine models.")
@click.option(
    "--hw",
    "hw_dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="With --mode programmable: the hardware directory from "
    "`xpfilt compile --mode programmable`.",
)
@compile_options
@click.option(
    "-o",
    "--output",
    type=click.File("w"),
    default="-",
    help="Write the TSV here instead of standard output.",
)
@click.option(
    "--spark",
    is_flag=True,
    help="Partition the documents over Spark executors (software engines); the "
    "answers go to --out as Parquet, resumably.",
)
@click.option(
    "--master",
    default=None,
    help="With --spark: the Spark master (default local[*], or spark-submit's; "
    "serial: the same tasks in this process).",
)
@click.option(
    "--out",
    "spark_out",
    type=click.Path(file_okay=False, path_type=Path),
    help="With --spark: the results folder (Parquet: document, path, row, matches, error).",
)
@click.option(
    "--batch-size",
    default=64,
    show_default=True,
    type=click.IntRange(1),
    help="With --spark: documents per task.",
)
@click.option(
    "--column",
    default=None,
    help="With --spark: DOCUMENTS are Parquet or JSON-lines tables (files, folders, "
    "globs) holding each document's XML in this column.",
)
@click.option(
    "--name-column",
    default=None,
    help="With --column: the column naming each document (default FILE[row]).",
)
@click.option(
    "--query-shards",
    type=click.IntRange(1),
    default=None,
    help="With --spark: split the queries into this many shards, one task per "
    "(batch, shard), answers merged per document (default: as many as the "
    "executor memory needs at ~1 KB per query).",
)
@click.argument("documents", nargs=-1, required=True, type=DocumentPath())
def filter_command(
    queries_path,
    engine,
    mode,
    hw_dir,
    output,
    documents,
    spark,
    master,
    spark_out,
    batch_size,
    column,
    name_column,
    query_shards,
    **kwargs,
):
    """Filter DOCUMENTS (files, directories of *.xml, or with --spark glob patterns, or
    with --column tables of XML strings) against the queries.

    Prints one line per document: the file name, a tab, and the space-separated numbers of the
    matching queries -- the format of shared/data/expected/*.tsv. Malformed documents and
    unsupported queries are reported on standard error; every other document and query still
    gets its answer, and the exit code is 1. With --spark the same answers are written to the
    --out folder as Parquet, one row per document, malformed ones with their error.
    """
    from xpfilt.compiler.options import MAX_NAME
    from xpfilt.engines import filter_lines, make_engine, split_supported

    options = options_from(kwargs)
    max_name = None if mode is EngineMode.PROGRAMMABLE else MAX_NAME
    queries, failed = read_queries(
        queries_path, refuse=lambda qs: split_supported(engine, qs, max_name=max_name)
    )
    spark_options = dict(
        batch_size=batch_size, column=column, name_column=name_column, query_shards=query_shards
    )
    if spark or spark_out or master or column or name_column or query_shards:
        _filter_on_spark(
            queries_path, engine, documents, spark, master, spark_out, spark_options, failed
        )
    if engine == "model" and mode is EngineMode.PROGRAMMABLE:
        from xpfilt.model.programmable import ProgrammableModelEngine

        filt = ProgrammableModelEngine(queries, load_hardware(hw_dir))
        for _, reason in filt.configuration.rejected:
            click.echo(f"xpfilt: {queries_path}: skipped: {reason}", err=True)
            failed = True
    else:
        filt = make_engine(engine, queries, options)
    gc.freeze()  # the queries and the engine stay out of the collections while filtering
    for _name, line, error in filter_lines(filt, document_paths(documents)):
        if error is None:
            output.write(line + "\n")
        else:
            click.echo(f"xpfilt: {error}", err=True)
            failed = True
    output.flush()
    sys.exit(1 if failed else 0)


def _filter_on_spark(queries_path, engine, documents, spark, master, out, options, failed):
    from xpfilt.scale.filter import SOFTWARE_ENGINES, TABLE_SUFFIXES, spark_filter

    if not (spark and out):
        raise click.UsageError(
            "--spark needs --out FOLDER, and --out, --master, --column, "
            "--name-column and --query-shards need --spark"
        )
    if engine not in SOFTWARE_ENGINES:
        raise click.UsageError(
            f"--spark runs the software engines ({', '.join(SOFTWARE_ENGINES)}), not {engine!r}"
        )
    if options["name_column"] and not options["column"]:
        raise click.UsageError("--name-column needs --column (the column of the XML)")
    tables = [str(d) for d in documents if Path(d).suffix in TABLE_SUFFIXES]
    if tables and not options["column"]:
        raise click.UsageError(
            f"{tables[0]}: a Parquet or JSON-lines table of documents needs "
            "--column NAME (the column of the XML)"
        )
    try:
        summary = spark_filter(
            queries_path,
            documents,
            out,
            engine=engine,
            master=master,
            progress=True,
            **options,
            log=lambda message: click.echo(f"xpfilt: {message}", err=True),
        )
    except (ValueError, RuntimeError) as exc:
        raise click.ClickException(str(exc)) from None
    for _document, error in summary.errors:
        click.echo(f"xpfilt: {error}", err=True)
    for first, status, reason in summary.failed:
        click.echo(f"xpfilt: a task of the batch from {first} {status}: {reason}", err=True)
    click.echo(f"xpfilt: {summary.line()}; answers in {out}", err=True)
    sys.exit(1 if failed or summary.errors or summary.failed else 0)


@main.command("compile")
@click.argument(
    "queries_path",
    metavar="[QUERIES]",
    required=False,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
)
@mode_option(
    show_default=True,
    help="custom: hardware specialised to QUERIES; programmable: "
    "generic columns, queries loaded later with `xpfilt configure` (no QUERIES).",
)
@compile_options
@click.option(
    "--max-name",
    type=click.IntRange(1),
    default=32,
    show_default=True,
    help="Longest element name the parser accepts (longer: error flag).",
)
@click.option(
    "--columns",
    type=click.IntRange(2),
    default=128,
    show_default=True,
    help="Programmable: generic columns per cluster (even).",
)
@click.option(
    "--clusters",
    type=click.IntRange(1),
    default=1,
    show_default=True,
    help="Programmable: number of clusters.",
)
@click.option(
    "--max-tag-len",
    type=click.IntRange(1),
    default=16,
    show_default=True,
    help="Programmable: longest tag a dictionary entry holds.",
)
@click.option(
    "--tags",
    type=click.IntRange(1),
    default=31,
    show_default=True,
    help="Programmable: distinct tags the loaded queries may name in all (the tag "
    "dictionary's entries).",
)
@click.option(
    "--slots",
    type=click.IntRange(0),
    default=0,
    show_default=True,
    help="Programmable: comparator slots, distinct attribute conditions (attribute, "
    "operator, constant) the loaded queries may test in all (0: no value "
    "predicates).",
)
@click.option(
    "--twig-width",
    type=click.IntRange(0),
    default=0,
    show_default=True,
    help="Programmable: split nodes for twigs such as //a[b]/c and /a/b[c]/d, a "
    "column's children among the next N columns (0: none, the hardware "
    "without split nodes; twigs rewritable into combinations of paths need "
    "none).",
)
@click.option(
    "--readout-group",
    type=click.IntRange(1),
    default=1,
    show_default=True,
    help="Programmable: columns per readout bit (a power of two; each group's bit is "
    "the match flag of the column its configuration selects, one query ending "
    "per group; needs --slots 0).",
)
@bytes_per_cycle_option
@click.option("-o", "--output-dir", required=True, type=click.Path(file_okay=False, path_type=Path))
def compile_command(
    queries_path,
    mode,
    max_name,
    columns,
    clusters,
    max_tag_len,
    output_dir,
    bytes_per_cycle,
    **kwargs,
):
    """Generate hardware. Custom: compile QUERIES into plan.json, xpfilt_engine.v and
    report.md. Programmable: hardware.json, xpfilt_engine.v and report.md for any query set
    that fits."""
    from xpfilt.hdl.verilog import build_programmable, compile_to_directory

    if mode is EngineMode.PROGRAMMABLE:
        if queries_path:
            raise click.UsageError(
                "--mode programmable takes no QUERIES: load them with "
                "`xpfilt configure QUERIES --hw DIR`"
            )
        refuse_wide_programmable(bytes_per_cycle)
        spec = spec_from_options(clusters, columns, max_tag_len, max_name, kwargs)
        click.echo(build_programmable(spec, output_dir, log=lambda m: click.echo(m, err=True)))
        return
    if not queries_path:
        raise click.UsageError("--mode custom needs QUERIES")
    options = options_from(kwargs)
    queries, skipped = read_hardware_queries(queries_path, max_name)
    from xpfilt.compiler.custom import UnsupportedQueryError

    try:
        report = compile_to_directory(
            queries,
            options,
            output_dir,
            max_name=max_name,
            log=lambda msg: click.echo(msg, err=True),
            bytes_per_cycle=bytes_per_cycle,
        )
    except UnsupportedQueryError as exc:
        raise click.ClickException(str(exc))
    click.echo(report)
    if skipped:
        sys.exit(1)


@main.command("configure")
@click.argument(
    "queries_path", metavar="QUERIES", type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@click.option(
    "--hw",
    "hw_dir",
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="The hardware directory from `xpfilt compile --mode programmable`.",
)
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The configuration stream (config.bin); a readout map goes beside it.",
)
@click.option(
    "--previous",
    "previous",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The full stream loaded now (an earlier OUTPUT): keep its queries where they "
    "are and also write OUTPUT.delta, a stream of only the clusters that change.",
)
def configure_command(queries_path, hw_dir, output, previous):
    """Generate the configuration stream that loads QUERIES into programmable hardware.

    Writes OUTPUT (the bits, LSB first) and OUTPUT.map.tsv (query number -> readout bit; for a
    boolean combination of paths, whose paths each get a readout bit, its and/or/not over those
    bits as JSON, e.g. ["and", ["c", 3], ["not", ["c", 5]]]).
    Queries that do not fit are listed with the reason and the columns missing; the others are
    configured, and the exit code is 1.

    With --previous OLD.bin, the queries OLD.bin holds keep their columns and readout bits,
    removed ones free theirs, new ones go into free columns, and OUTPUT.delta (with its own
    map) rewrites only the clusters that change; the engine takes it only while OLD.bin's
    configuration is the active one. OUTPUT stays a full stream, the next --previous.
    """
    import time as _time

    from xpfilt.compiler.programmable import configure, delta_path, readout_map_path

    spec = load_hardware(hw_dir)
    queries, failed = read_queries(queries_path)
    start = _time.perf_counter()
    base = None if previous is None else previous.read_bytes()
    try:
        configuration = configure(queries, spec, previous=base, what=str(previous))
    except ValueError as exc:
        raise click.ClickException(str(exc))
    stream = configuration.stream()
    elapsed = _time.perf_counter() - start
    Path(output).write_bytes(stream)
    configuration.write_readout_map(output)
    if configuration.rejected:
        click.echo(f"xpfilt: {configuration.summary()}", err=True)
        failed = True
    combined = configuration.combined
    paths = sum(len(list(where.leaves())) for where in combined.values())
    internal = (
        f" ({len(combined)} of them combinations of paths, decoded from the readout "
        f"bits of their {paths} paths as {readout_map_path(output)} says)"
        if combined
        else ""
    )
    click.echo(
        f"{len(configuration.answers)} queries configured{internal} on "
        f"{spec.clusters * spec.columns} columns; {len(stream) * 8} bits written to "
        f"{output} in {elapsed:.3f} s",
        err=True,
    )
    if previous is not None:
        delta = delta_path(output)
        delta_stream = configuration.delta()
        delta.write_bytes(delta_stream)
        configuration.write_readout_map(delta)
        click.echo(
            f"delta from {previous}: {len(configuration.changed)} of {spec.clusters} "
            f"clusters change; {len(delta_stream) * 8} bits written to {delta}",
            err=True,
        )
    sys.exit(1 if failed else 0)


@main.command("gen-queries")
@click.option(
    "--dtd",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Generate paths through this DTD (YFilter PathGenerator style).",
)
@click.option("--root", help="Root element of the DTD (default: guessed).")
@click.option(
    "--from-docs",
    "from_docs",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Instead of a DTD, sample element paths from these documents (or folders).",
)
@click.option("-n", "--count", default=1000, show_default=True, type=click.IntRange(1))
@click.option("-d", "--max-depth", default=6, show_default=True, type=click.IntRange(1))
@click.option(
    "--p-wildcard",
    default=0.15,
    show_default=True,
    callback=probability,
    help="Probability that a step is '*'.",
)
@click.option(
    "--p-descendant",
    default=0.15,
    show_default=True,
    callback=probability,
    help="Probability that a step is preceded by '//'.",
)
@click.option(
    "--predicates",
    default=0,
    show_default=True,
    type=click.IntRange(0),
    help="Value predicates per query, each on a different step (YFilter's axis).",
)
@click.option(
    "--p-text",
    default=0.0,
    show_default=True,
    callback=probability,
    help="Probability that a predicate tests text() rather than an attribute.",
)
@click.option(
    "--operators",
    default="=",
    show_default=True,
    help="Comparison operators to draw from, comma-separated (e.g. '=,!=,<,>=').",
)
@click.option(
    "--p-clause",
    default=0.0,
    show_default=True,
    callback=probability,
    help="Probability that a predicate is a clause (and, or, not).",
)
@click.option(
    "--max-value",
    default=20,
    show_default=True,
    type=click.IntRange(1),
    help="Numeric constants are drawn from 1..MAX_VALUE (gen-docs' value range).",
)
@click.option(
    "--nested-paths",
    default=0,
    show_default=True,
    type=click.IntRange(0),
    help="Nested paths (twig branches) per query, each on a different step.",
)
@click.option(
    "--nested-depth",
    default=2,
    show_default=True,
    type=click.IntRange(1),
    help="Most steps of a nested path.",
)
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("-o", "--output", type=click.File("w"), default="-")
def gen_queries(
    dtd,
    root,
    from_docs,
    count,
    max_depth,
    p_wildcard,
    p_descendant,
    predicates,
    p_text,
    operators,
    p_clause,
    max_value,
    nested_paths,
    nested_depth,
    seed,
    output,
):
    """Generate COUNT distinct queries along the paper's axes (depth, '*', '//') and YFilter's
    predicate axes (predicates per query, attribute or text, operators, clauses, nested
    paths)."""
    from xpfilt import workloads
    from xpfilt.software.events import Document, load_documents

    try:
        predicate_config = workloads.PredicateGenConfig(
            count=predicates,
            p_text=p_text,
            p_clause=p_clause,
            max_value=max_value,
            nested_paths=nested_paths,
            nested_depth=nested_depth,
            operators=tuple(op.strip() for op in operators.split(",") if op.strip()),
        )
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--operators") from None
    config = workloads.QueryGenConfig(
        count=count,
        max_depth=max_depth,
        p_wildcard=p_wildcard,
        p_descendant=p_descendant,
        seed=seed,
        predicates=predicate_config,
    )
    if bool(dtd) == bool(from_docs):
        raise click.UsageError("give exactly one of --dtd and --from-docs")
    try:
        if dtd:
            queries = workloads.generate_queries(workloads.DtdSchema.load(dtd, root=root), config)
        else:
            docs = [Document.from_path(p) for p in load_documents(from_docs)]
            if not docs:
                raise click.ClickException(
                    f"--from-docs {' '.join(map(str, from_docs))}: no "
                    "document there (folders give their *.xml files)"
                )
            queries = workloads.sample_queries(docs, config)
    except ValueError as exc:
        raise click.ClickException(str(exc))
    output.write("".join(q + "\n" for q in queries))


@main.command("gen-docs")
@click.option("--dtd", required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--root", help="Root element of the DTD (default: guessed).")
@click.option("-n", "--count", default=10, show_default=True, type=click.IntRange(1))
@click.option(
    "--size",
    default="220K",
    show_default=True,
    type=ByteSize(),
    help="Target size of each document (the paper: 220K and 2.2M).",
)
@click.option("-d", "--max-depth", default=16, show_default=True, type=click.IntRange(1))
@click.option("--fanout", default=4, show_default=True, type=click.IntRange(1))
@click.option(
    "--p-number-text",
    default=0.0,
    show_default=True,
    callback=probability,
    help="Probability that an element's text is a number from 1..20 (makes text() "
    "predicates selective).",
)
@click.option("--seed", default=0, show_default=True, type=int)
@click.option(
    "--compact",
    is_flag=True,
    help="Also write the paper's compact form (2-byte tag ids, one tag per line) "
    "as NAME.compact.xml, and tag-ids.tsv.",
)
@click.option("-o", "--output-dir", required=True, type=click.Path(file_okay=False, path_type=Path))
def gen_docs(dtd, root, count, size, max_depth, fanout, p_number_text, seed, compact, output_dir):
    """Generate COUNT random documents from a DTD (ToXgene-like), written as doc-N.xml."""
    from xpfilt import workloads

    schema = workloads.DtdSchema.load(dtd, root=root)
    config = workloads.DocGenConfig(
        max_depth=max_depth,
        fanout=fanout,
        target_bytes=size,
        p_number_text=p_number_text,
        seed=seed,
    )
    output_dir.mkdir(parents=True, exist_ok=True)
    ids = workloads.tag_ids(sorted(schema.elements)) if compact else None
    width = len(str(count))
    with click.progressbar(length=count, label="generating documents", file=sys.stderr) as bar:
        for i, data in enumerate(workloads.generate_documents(schema, config, count)):
            name = f"doc-{i + 1:0{width}d}"
            (output_dir / f"{name}.xml").write_bytes(data)
            if ids is not None:
                (output_dir / f"{name}.compact.xml").write_bytes(workloads.to_compact(data, ids))
            bar.update(1)
    if ids is not None:
        (output_dir / "tag-ids.tsv").write_text(
            "".join(f"{name}\t{tag}\n" for name, tag in sorted(ids.items()))
        )
    click.echo(f"wrote {count} documents to {output_dir}", err=True)


@main.command("regress")
@click.argument(
    "queries_path", metavar="QUERIES", type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@click.argument(
    "documents",
    metavar="DOC_OR_DIR...",
    nargs=-1,
    required=True,
    type=click.Path(exists=True, path_type=Path),
)
@click.option(
    "--sim",
    "simulator",
    type=click.Choice(["verilator", "icarus"]),
    default="verilator",
    show_default=True,
    help="Simulator under cocotb.",
)
@compile_options
@click.option(
    "--max-name",
    type=click.IntRange(1),
    default=32,
    show_default=True,
    help="Longest element name the parser accepts (longer: error flag).",
)
@click.option(
    "--seed",
    default=0,
    show_default=True,
    type=int,
    help="Seed of the random valid gaps and readout backpressure.",
)
@click.option(
    "--p-valid",
    default=0.8,
    show_default=True,
    type=click.FloatRange(0, 1, min_open=True),
    help="Probability that a byte is offered in a cycle.",
)
@click.option(
    "--p-ready",
    default=0.8,
    show_default=True,
    type=click.FloatRange(0, 1, min_open=True),
    help="Probability that the readout is accepted in a cycle.",
)
@click.option(
    "--build-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where simulator builds are cached (default: build/sim, or $XPFILT_SIM_BUILD).",
)
@click.option(
    "--replay-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where replay folders of mismatches go (default: BUILD_DIR/replays).",
)
@click.option(
    "--no-verify-replay",
    is_flag=True,
    help="Do not rerun a replay folder to check (and shrink) it.",
)
@mode_option(
    show_default=True,
    help="custom: the engine generated for QUERIES; programmable: "
    "the generic engine of --hw, loaded with QUERIES by configuration streams.",
)
@click.option(
    "--hw",
    "hw_dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Programmable: the directory of `xpfilt compile --mode programmable` (its hardware.json).",
)
@click.option(
    "--reconfigure",
    "reconfigure",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Programmable: another query set to load after QUERIES (repeatable); the "
    "documents are split evenly between the query sets, in order.",
)
@click.option(
    "--bad-streams/--no-bad-streams",
    default=True,
    show_default=True,
    help="Programmable: before each --reconfigure stream, send a corrupt and a "
    "truncated copy of it, which the engine must reject (keeping the old set).",
)
@click.option(
    "--fault",
    type=click.Choice(["model", "reference", "status"]),
    default=None,
    hidden=True,
    help="Test hook: make the expectation deliberately wrong.",
)
@click.option(
    "--spark",
    is_flag=True,
    help="Shard the regression over (query set x document "
    "batch) and run the shards on Spark; one summary at the end.",
)
@click.option(
    "--master", default=None, help="With --spark: the Spark master (default local[*]), or 'serial'."
)
@click.option(
    "--also",
    "also_queries",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="With --spark: another query set to regress on the same documents (repeatable).",
)
@click.option(
    "--batch-size",
    default=25,
    show_default=True,
    type=click.IntRange(1),
    help="With --spark: documents per shard.",
)
@click.option(
    "--model-only",
    is_flag=True,
    help="With --spark: only the model-vs-reference regression (no cocotb).",
)
@click.option(
    "--timeout",
    "shard_timeout",
    default=None,
    type=click.FloatRange(1),
    help="With --spark: seconds after which a shard is cancelled (a row, not lost).",
)
@bytes_per_cycle_option
def regress_command(
    queries_path,
    documents,
    simulator,
    max_name,
    seed,
    p_valid,
    p_ready,
    build_dir,
    replay_dir,
    no_verify_replay,
    mode,
    hw_dir,
    reconfigure,
    bad_streams,
    fault,
    spark,
    master,
    also_queries,
    batch_size,
    model_only,
    shard_timeout,
    bytes_per_cycle,
    **kwargs,
):
    """Simulate the generated RTL of QUERIES in cocotb and check it on DOC_OR_DIR...

    All documents (files, or directories of *.xml) stream back to back through one simulation
    with random valid gaps and readout backpressure. Every cycle is compared with the
    cycle-accurate model, every document's answer with the reference filter (malformed, too
    deep or long-named documents must raise the error flags instead). Prints a summary; on a
    mismatch writes a replay folder with the command that reproduces it, and exits with 1.

    \b
    --mode programmable --hw DIR [--reconfigure QUERIES2]...: the programmable engine of DIR
    (built once, whatever the queries). The host loads QUERIES by a configuration stream
    (one bit per transfer, random gaps), streams the first share of the documents, then for
    each --reconfigure set sends a corrupt and a truncated stream (must be rejected: the old
    set stays) and the good one, and streams the next share. Every cycle (data, readout,
    config.ready, config_status) is compared with the model, every document with the
    reference of the set active when it streamed. --max-name, --max-depth and the custom
    compile options come from hardware.json and are ignored. Example:

    \b
      xpfilt compile --mode programmable --clusters 2 --columns 64 -o hw
      xpfilt regress A.txt docs/ --mode programmable --hw hw --reconfigure B.txt
    """
    from xpfilt.verify.regress import RegressionConfig, run_regression

    if mode is EngineMode.PROGRAMMABLE:
        refuse_wide_programmable(bytes_per_cycle)
        config = RegressionConfig(
            queries=queries_path,
            documents=list(documents),
            simulator=simulator,
            seed=seed,
            p_valid=p_valid,
            p_ready=p_ready,
            build_dir=build_dir,
            replay_dir=replay_dir,
            verify_replay=not no_verify_replay,
            fault=fault,
            mode=mode,
            hardware=load_hardware(hw_dir),
            reconfigure=list(reconfigure),
            bad_streams=bad_streams,
        )
    else:
        if hw_dir is not None or reconfigure:
            raise click.UsageError("--hw and --reconfigure need --mode programmable")
        if fault == "status":
            raise click.UsageError("--fault status needs --mode programmable")
        config = RegressionConfig(
            queries=queries_path,
            documents=list(documents),
            options=options_from(kwargs),
            simulator=simulator,
            seed=seed,
            p_valid=p_valid,
            p_ready=p_ready,
            max_name=max_name,
            build_dir=build_dir,
            replay_dir=replay_dir,
            verify_replay=not no_verify_replay,
            fault=fault,
            bytes_per_cycle=bytes_per_cycle,
        )
    if spark:
        if mode is not EngineMode.CUSTOM:
            raise click.UsageError(
                "--spark shards the custom-engine regression; run "
                "--mode programmable without --spark"
            )
        from xpfilt.verify.regress_sharded import make_shards, run_sharded

        try:
            shards = make_shards(
                config,
                [queries_path, *also_queries],
                documents,
                batch_size=batch_size,
                rtl=not model_only,
            )
            click.echo(
                f"{len(shards)} shards ({1 + len(also_queries)} query sets x "
                f"batches of {batch_size} documents)",
                err=True,
            )
            sharded = run_sharded(shards, master=master, timeout=shard_timeout)
        except (ValueError, RuntimeError) as exc:
            raise click.ClickException(str(exc))
        click.echo(sharded.format())
        sys.exit(0 if sharded.ok else 1)
    elif also_queries or model_only or master or shard_timeout:
        raise click.UsageError("--also, --model-only, --master and --timeout need --spark")
    try:
        summary = run_regression(config, log=lambda msg: click.echo(msg, err=True))
    except (ValueError, RuntimeError) as exc:
        raise click.ClickException(str(exc))
    click.echo(summary.format())
    sys.exit(0 if summary.ok else 1)


@main.command("sweep")
@click.argument(
    "spec_path", metavar="SPEC.yaml", type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@click.option(
    "-o",
    "--output-dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Sweep folder: Parquet rows (engine=*/device=*/*.parquet).",
)
@click.option(
    "--master",
    default=None,
    help="Spark master (default local[*]; spark://..., "
    "yarn, k8s://... pass through unchanged), or 'serial' for no Spark.",
)
@click.option(
    "--retry-failed", is_flag=True, help="Recompute points whose saved row failed or timed out."
)
@click.option(
    "--limit",
    type=click.IntRange(1),
    default=None,
    help="Compute at most this many new points (the rest stays for a later run).",
)
@click.option(
    "--report/--no-report",
    "make_report",
    default=True,
    show_default=True,
    help="Write OUTPUT_DIR/_report/ (plots and summary) at the end.",
)
def sweep_command(spec_path, output_dir, master, retry_failed, limit, make_report):
    """Evaluate the design points of SPEC.yaml on Spark; save a Parquet row per point.

    Resumable: points already saved in OUTPUT_DIR are skipped, so an interrupted sweep
    continues where it stopped. A point that fails or times out is saved as a row with its
    reason. SPEC.yaml:

    \b
      grid:                        # one mapping, or a list of mappings (concatenated)
        engine: [custom, programmable]
        queries: [32, 96]
        depth: [4, 8]
        cluster_size: [16, 32, 64]
        opt_last: [true, false]    # any DesignPoint field: a value or a list of values
        device: ecp5               # xilinx (Yosys only), ecp5, ice40
      synthesize: true             # Yosys cell counts
      place_and_route: true        # nextpnr Fmax -> throughput MB/s
      target_mhz: 200              # nextpnr's target (set it above the expected Fmax)
      timeout: 900                 # seconds per tool run
    """
    from xpfilt.scale.sweep import load_spec, run_sweep

    try:
        spec = load_spec(spec_path)
    except ValueError as exc:
        raise click.ClickException(str(exc))
    try:
        summary = run_sweep(
            spec,
            output_dir,
            master=master,
            retry_failed=retry_failed,
            limit=limit,
            log=lambda message: click.echo(message, err=True),
        )
    except RuntimeError as exc:
        raise click.ClickException(str(exc))
    click.echo(summary.line())
    if make_report:
        from xpfilt.scale.report import write_report

        report = write_report(output_dir)
        click.echo(f"report: {report.folder / 'index.html'} ({report.folder / 'summary.md'})")


@main.command("report")
@click.argument(
    "sweep_dir", metavar="SWEEP_DIR", type=click.Path(exists=True, file_okay=False, path_type=Path)
)
@click.option(
    "-o",
    "--output-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the report goes (default: SWEEP_DIR/report).",
)
@click.option(
    "--baselines",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Software filters' MB/s to draw beside the hardware's (a result file such as "
    "bench/results/reference_throughput.json).",
)
def report_command(sweep_dir, output_dir, baselines):
    """Plots (Fmax vs cluster size, resources and Fmax vs query nodes, throughput vs queries)
    and a Markdown/HTML summary of the sweep in SWEEP_DIR."""
    from xpfilt.scale.report import write_report

    try:
        report = write_report(sweep_dir, output_dir, baselines=baselines)
    except FileNotFoundError as exc:
        raise click.ClickException(str(exc))
    click.echo(f"{report.rows} rows ({report.ok} ok); wrote:")
    for path in report.files:
        click.echo(f"  {path}")
