"""Options and helpers the ``xpfilt`` commands share (the main group's commands in
:mod:`xpfilt.cli`, the board commands in :mod:`xpfilt.boards.cli`), defined once."""

from __future__ import annotations

import os
import re

import click

from xpfilt.compiler.options import EngineMode

_SIZE = re.compile(r"(?i)\s*([0-9]+(?:\.[0-9]+)?)\s*([kmg]?)i?b?\s*\Z")


class ByteSize(click.ParamType):
    """``220K``, ``2.2M``, ``4096``: a size in bytes (K = 1000)."""

    name = "size"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        m = _SIZE.match(str(value))
        if not m:
            self.fail(
                f"size must be a number with an optional K/M/G suffix, not {value!r}", param, ctx
            )
        scale = {"": 1, "k": 1_000, "m": 1_000_000, "g": 1_000_000_000}[m.group(2).lower()]
        return int(float(m.group(1)) * scale)


def probability(ctx, param, value):
    if not 0.0 <= value <= 1.0:
        raise click.BadParameter(f"must be between 0 and 1, not {value!r}")
    return value


def mode_option(**kwargs):
    """``--mode custom|programmable``, given to the command as an :class:`EngineMode`."""
    return click.option(
        "--mode",
        type=click.Choice([m.value for m in EngineMode]),
        default=EngineMode.CUSTOM.value,
        callback=lambda ctx, param, value: EngineMode(value),
        **kwargs,
    )


def compile_options(fn):
    """The custom engine's compile options, shared by ``compile`` and the hardware engines."""
    options = [
        click.option(
            "--cluster-size",
            type=click.IntRange(1),
            default=None,
            help="Queries per cluster (default: 256 for queries of at most 4 steps, else 128).",
        ),
        click.option(
            "--max-depth",
            type=click.IntRange(1),
            default=16,
            show_default=True,
            help="Deepest document level the stacks hold (deeper: error flag).",
        ),
        click.option("--no-opt1", is_flag=True, help="Give the last node of a query a column."),
        click.option(
            "--no-opt2",
            is_flag=True,
            help="Give the root node a column instead of reading the global stack.",
        ),
        click.option("--no-opt3", is_flag=True, help="Never share a column between nodes."),
        click.option(
            "--no-prefix-sharing",
            is_flag=True,
            help="Do not share common query prefixes within a cluster.",
        ),
        click.option(
            "--file-order",
            is_flag=True,
            help="Fill the clusters in query file order instead of text order (which "
            "gathers common prefixes in one cluster; answers are the same).",
        ),
        click.option(
            "--readout",
            type=click.Choice(["serial", "sparse"]),
            default="serial",
            show_default=True,
            help="Match readout: the paper's bitmap, one bit per query per document "
            "(serial), or a header and the matching query ids only (sparse).",
        ),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def bytes_per_cycle_option(fn):
    """``--bytes-per-cycle W``: the custom engine's input width (1 = the one-byte engine)."""
    return click.option(
        "--bytes-per-cycle",
        type=click.Choice(["1", "2", "4", "8"]),
        default="1",
        show_default=True,
        callback=lambda ctx, param, value: int(value),
        help="Custom engine: document bytes taken per cycle (beats of W bytes; events queue "
        "for the stacks at one per cycle). Queries with value predicates need 1.",
    )(fn)


def refuse_wide_programmable(bytes_per_cycle: int) -> None:
    """The one answer to ``--bytes-per-cycle W`` (W > 1) with ``--mode programmable``."""
    if bytes_per_cycle != 1:
        raise click.UsageError(
            f"--bytes-per-cycle must be 1 with --mode programmable (its "
            f"W-byte front end is not built yet), not {bytes_per_cycle}"
        )


def options_from(kwargs):
    from xpfilt.compiler.options import CompileOptions

    return CompileOptions(
        cluster_size=kwargs.pop("cluster_size"),
        max_depth=kwargs.pop("max_depth"),
        opt_last=not kwargs.pop("no_opt1"),
        opt_root=not kwargs.pop("no_opt2"),
        opt_share=not kwargs.pop("no_opt3"),
        prefix_sharing=not kwargs.pop("no_prefix_sharing"),
        prefix_clustering=not kwargs.pop("file_order"),
        readout=kwargs.pop("readout"),
    )


class DocumentPath(click.Path):
    """A DOCUMENTS argument: :class:`click.Path` without its look at each one (a ``stat`` and
    a :class:`pathlib.Path` per file, ~5 µs: thousands of documents are named on one command
    line); :func:`document_paths` tells files from folders."""

    def convert(self, value, param, ctx):
        return value


def document_paths(documents):
    """The documents of the DOCUMENTS arguments (folders give their *.xml files, in
    :func:`xpfilt.software.events.load_documents` order; files stay as given); none at all is
    an error, not an empty answer."""
    from xpfilt.software.events import load_documents

    paths = []
    for document in documents:
        if os.path.isdir(document):
            paths += load_documents([document])
        else:
            paths.append(document)
    if not paths:
        raise click.ClickException(
            f"{' '.join(map(str, documents))}: no document there (folders give their *.xml files)"
        )
    return paths


def read_queries(queries_path, refuse=None):
    """The queries of the file QUERIES. Each line that is not a query, and each query
    ``refuse`` (queries -> (kept queries, messages)) turns away, is reported on standard error
    (``xpfilt: QUERIES: ... skipped: ...``) and left out. Returns (queries, whether any was
    left out)."""
    from xpfilt.lang.xpath import load_queries
    from xpfilt.software.fast import gc_paused

    with gc_paused():  # about 10 objects per query, none in a cycle
        loaded = load_queries(queries_path)
    for error in loaded.errors:
        click.echo(f"xpfilt: {queries_path}: line {error.number}: skipped: {error}", err=True)
    queries, refused = refuse(loaded.queries) if refuse else (list(loaded.queries), [])
    for message in refused:
        click.echo(f"xpfilt: {queries_path}: skipped: {message}", err=True)
    return queries, bool(loaded.errors or refused)


def read_hardware_queries(queries_path, max_name):
    """:func:`read_queries` for a custom engine whose front end takes names of ``max_name``
    bytes. No query left is an error."""
    from xpfilt.compiler.custom import hardware_queries

    queries, skipped = read_queries(queries_path, lambda qs: hardware_queries(qs, max_name))
    if not queries:
        raise click.ClickException(f"{queries_path}: no query left to build hardware for")
    return queries, skipped


def spec_from_options(clusters, columns, max_tag_len, max_name, kwargs):
    """The programmable hardware the command-line options describe (``kwargs``: the compile
    options' values)."""
    from xpfilt.compiler.programmable import HardwareSpec

    try:
        return HardwareSpec(
            clusters=clusters,
            columns=columns,
            max_tag_len=max_tag_len,
            max_depth=kwargs["max_depth"],
            max_name=max_name,
            readout=kwargs["readout"],
            tags=kwargs.pop("tags", 31),
            slots=kwargs.pop("slots", 0),
            twig_width=kwargs.pop("twig_width", 0),
            readout_group=kwargs.pop("readout_group", 1),
        )
    except ValueError as exc:
        raise click.ClickException(str(exc))


def load_hardware(hw_dir):
    from xpfilt.compiler.programmable import HardwareSpec

    if hw_dir is None:
        raise click.UsageError("--hw DIR (from `xpfilt compile --mode programmable`) is needed")
    try:
        return HardwareSpec.load(hw_dir)
    except ValueError as exc:
        raise click.ClickException(str(exc))
