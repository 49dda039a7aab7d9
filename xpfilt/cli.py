"""The ``xpfilt`` command line: workloads, filtering, and (later) compile/simulate/build/sweep."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from . import __version__

_SIZE = re.compile(r"(?i)\s*([0-9]+(?:\.[0-9]+)?)\s*([kmg]?)i?b?\s*\Z")


class ByteSize(click.ParamType):
    """``220K``, ``2.2M``, ``4096``: a size in bytes (K = 1000)."""
    name = "size"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        m = _SIZE.match(str(value))
        if not m:
            self.fail(f"size must be a number with an optional K/M/G suffix, not {value!r}",
                      param, ctx)
        scale = {"": 1, "k": 1_000, "m": 1_000_000, "g": 1_000_000_000}[m.group(2).lower()]
        return int(float(m.group(1)) * scale)


def _probability(ctx, param, value):
    if not 0.0 <= value <= 1.0:
        raise click.BadParameter(f"must be between 0 and 1, not {value!r}")
    return value


def compile_options(fn):
    """The custom engine's compile options, shared by ``compile`` and the hardware engines."""
    options = [
        click.option("--cluster-size", type=click.IntRange(1), default=None,
                     help="Queries per cluster (default: 256 for queries of at most 4 steps, "
                          "else 128)."),
        click.option("--max-depth", type=click.IntRange(1), default=16, show_default=True,
                     help="Deepest document level the stacks hold (deeper: error flag)."),
        click.option("--no-opt1", is_flag=True, help="Give the last node of a query a column."),
        click.option("--no-opt2", is_flag=True,
                     help="Give the root node a column instead of reading the global stack."),
        click.option("--no-opt3", is_flag=True, help="Never share a column between nodes."),
        click.option("--no-prefix-sharing", is_flag=True,
                     help="Do not share common query prefixes within a cluster."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _options_from(kwargs):
    from .compiler import CompileOptions
    return CompileOptions(
        cluster_size=kwargs.pop("cluster_size"), max_depth=kwargs.pop("max_depth"),
        opt_last=not kwargs.pop("no_opt1"), opt_root=not kwargs.pop("no_opt2"),
        opt_share=not kwargs.pop("no_opt3"), prefix_sharing=not kwargs.pop("no_prefix_sharing"))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="xpfilt")
def main():
    """xpfilt: filter XML document streams against thousands of XPath profiles, in FPGA
    hardware generated from the profiles, with a reference filter to prove it right.

    Start with `xpfilt filter --help`.
    """


@main.command("filter")
@click.option("-q", "--queries", "queries_path", required=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Query file: one XPath per line; query number = line number.")
@click.option("-e", "--engine", default="reference", show_default=True,
              type=click.Choice(["reference", "lxml", "model"]),
              help="reference: the paper's stack algorithm in software; "
                   "lxml: libxml2 evaluating each query separately; "
                   "model: the cycle-accurate model of the generated custom hardware.")
@compile_options
@click.option("-o", "--output", type=click.File("w"), default="-",
              help="Write the TSV here instead of standard output.")
@click.argument("documents", nargs=-1, required=True, type=click.Path(path_type=Path))
def filter_command(queries_path, engine, output, documents, **kwargs):
    """Filter DOCUMENTS (files, or directories of *.xml) against the queries.

    Prints one line per document: the file name, a tab, and the space-separated numbers of the
    matching queries -- the format of shared/data/expected/*.tsv. Malformed documents and
    unsupported queries are reported on standard error; every other document and query still
    gets its answer, and the exit code is 1.
    """
    from .engines import filter_batch, make_engine, split_supported
    from .events import load_documents
    from .results import format_tsv_line
    from .xpath import load_queries

    options = _options_from(kwargs)
    loaded = load_queries(queries_path)
    failed = False
    for error in loaded.errors:
        click.echo(f"xpfilt: {queries_path}: line {error.number}: skipped: {error}", err=True)
        failed = True
    queries, refused = split_supported(engine, loaded.queries)
    for message in refused:
        click.echo(f"xpfilt: {queries_path}: skipped: {message}", err=True)
        failed = True
    filt = make_engine(engine, queries, options)
    for result in filter_batch(filt, load_documents(documents)):
        if result.ok:
            output.write(format_tsv_line(result.name, result.matches) + "\n")
        else:
            click.echo(f"xpfilt: {result.error}", err=True)
            failed = True
    output.flush()
    sys.exit(1 if failed else 0)


@main.command("compile")
@click.argument("queries_path", metavar="QUERIES",
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--mode", type=click.Choice(["custom"]), default="custom", show_default=True,
              help="custom: hardware specialised to this query set.")
@compile_options
@click.option("--max-name", type=click.IntRange(1), default=32, show_default=True,
              help="Longest element name the parser accepts (longer: error flag).")
@click.option("-o", "--output-dir", required=True,
              type=click.Path(file_okay=False, path_type=Path))
def compile_command(queries_path, mode, max_name, output_dir, **kwargs):
    """Compile QUERIES into hardware: writes plan.json, xpfilt_engine.v and report.md."""
    from .build import compile_to_directory
    from .xpath import load_queries

    options = _options_from(kwargs)
    loaded = load_queries(queries_path)
    for error in loaded.errors:
        click.echo(f"xpfilt: {queries_path}: line {error.number}: skipped: {error}", err=True)
    from .compiler import UnsupportedQueryError
    try:
        report = compile_to_directory(loaded.queries, options, output_dir, max_name=max_name,
                                      log=lambda msg: click.echo(msg, err=True))
    except UnsupportedQueryError as exc:
        raise click.ClickException(str(exc))
    click.echo(report)
    if loaded.errors:
        sys.exit(1)


@main.command("gen-queries")
@click.option("--dtd", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Generate paths through this DTD (YFilter PathGenerator style).")
@click.option("--root", help="Root element of the DTD (default: guessed).")
@click.option("--from-docs", "from_docs", multiple=True, type=click.Path(path_type=Path),
              help="Instead of a DTD, sample element paths from these documents (or folders).")
@click.option("-n", "--count", default=1000, show_default=True, type=click.IntRange(1))
@click.option("-d", "--max-depth", default=6, show_default=True, type=click.IntRange(1))
@click.option("--p-wildcard", default=0.15, show_default=True, callback=_probability,
              help="Probability that a step is '*'.")
@click.option("--p-descendant", default=0.15, show_default=True, callback=_probability,
              help="Probability that a step is preceded by '//'.")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("-o", "--output", type=click.File("w"), default="-")
def gen_queries(dtd, root, from_docs, count, max_depth, p_wildcard, p_descendant, seed, output):
    """Generate COUNT distinct path queries (the paper's workload axes: depth, '*', '//')."""
    from . import workloads
    from .events import Document, load_documents

    config = workloads.QueryGenConfig(count=count, max_depth=max_depth, p_wildcard=p_wildcard,
                                      p_descendant=p_descendant, seed=seed)
    if bool(dtd) == bool(from_docs):
        raise click.UsageError("give exactly one of --dtd and --from-docs")
    try:
        if dtd:
            queries = workloads.generate_queries(workloads.DtdSchema.load(dtd, root=root), config)
        else:
            docs = [Document.from_path(p) for p in load_documents(from_docs)]
            queries = workloads.sample_queries(docs, config)
    except ValueError as exc:
        raise click.ClickException(str(exc))
    output.write("".join(q + "\n" for q in queries))


@main.command("gen-docs")
@click.option("--dtd", required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--root", help="Root element of the DTD (default: guessed).")
@click.option("-n", "--count", default=10, show_default=True, type=click.IntRange(1))
@click.option("--size", default="220K", show_default=True, type=ByteSize(),
              help="Target size of each document (the paper: 220K and 2.2M).")
@click.option("-d", "--max-depth", default=16, show_default=True, type=click.IntRange(1))
@click.option("--fanout", default=4, show_default=True, type=click.IntRange(1))
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--compact", is_flag=True,
              help="Also write the paper's compact form (2-byte tag ids, one tag per line) "
                   "as NAME.compact.xml, and tag-ids.tsv.")
@click.option("-o", "--output-dir", required=True, type=click.Path(file_okay=False, path_type=Path))
def gen_docs(dtd, root, count, size, max_depth, fanout, seed, compact, output_dir):
    """Generate COUNT random documents from a DTD (ToXgene-like), written as doc-N.xml."""
    from . import workloads

    schema = workloads.DtdSchema.load(dtd, root=root)
    config = workloads.DocGenConfig(max_depth=max_depth, fanout=fanout, target_bytes=size,
                                    seed=seed)
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
            "".join(f"{name}\t{tag}\n" for name, tag in sorted(ids.items())))
    click.echo(f"wrote {count} documents to {output_dir}", err=True)


if __name__ == "__main__":  # pragma: no cover
    main()
