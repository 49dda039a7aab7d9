"""``xpfilt report OUT/``: a sweep's rows turned into plots and a summary a person can read.

:func:`write_report` reads the rows of a sweep folder (:class:`xpfilt.scale.store.SweepStore`)
and writes into ``OUT/_report/`` (or another folder; the ``_`` makes Parquet readers --
pyarrow.dataset, Spark -- skip it, so OUT still reads as one table):

* ``fmax_vs_cluster_size.png`` -- Fmax against cluster size, a line per engine / depth / device
  (the paper's Fig. 9; a custom engine's cluster size counts queries, a programmable one's
  stack columns: :data:`xpfilt.scale.sweep.CLUSTER_UNIT`, named in every label and table);
* ``resources_vs_query_nodes.png`` -- LUTs and Fmax against query nodes, custom beside
  programmable (Fig. 10);
* ``columns_vs_query_nodes.png`` -- stack columns against query nodes (the compiler's count,
  no synthesis needed) and the model's bytes per cycle against queries;
* ``throughput_vs_queries.png`` -- MB/s (bytes per cycle x Fmax) against the number of queries,
  with software filters as reference lines when the caller gives their measurements
  (``baselines``: a result file such as ``bench/results/reference_throughput.json``, or
  ``xpfilt report --baselines FILE``) (Fig. 11);
* ``pareto_throughput_vs_luts.png`` -- MB/s against LUTs, a colour per device and engine, each
  with its Pareto front (no other point is both smaller and faster), and the best point per
  device named in a table: the question a sweep exists to answer;
* ``summary.md`` and ``index.html`` -- what was swept, how the points ended, the best points per
  engine, the tables behind each plot, and every failure with its reason;
* ``rows.csv`` -- every row, for a spreadsheet.

A plot whose metric no point has (e.g. Fmax of a sweep without ``place_and_route``) is replaced
by a sentence saying which option produces it.
"""

from __future__ import annotations

import csv
import html
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union

from xpfilt.scale.sweep import CLUSTER_UNIT

__all__ = [
    "write_report",
    "Report",
    "REPORT_FOLDER",
    "pareto_front",
    "best_per_device",
    "software_baselines",
]

#: The report's folder inside a sweep's output folder (Parquet readers skip ``_`` folders).
REPORT_FOLDER = "_report"

POINT_FIELDS = (
    "engine",
    "device",
    "queries",
    "depth",
    "p_wildcard",
    "p_descendant",
    "cluster_size",
    "opt_last",
    "opt_root",
    "opt_share",
    "prefix_sharing",
    "max_depth",
    "seed",
)


@dataclass
class Report:
    """What :func:`write_report` wrote: the folder, the files, and the row counts."""

    folder: Path
    files: list = field(default_factory=list)
    rows: int = 0
    ok: int = 0


def _series_label(row: dict) -> str:
    return f"{row['engine']} d{row['depth']} {row['device']}"


def _cluster(row: dict) -> str:
    """The row's cluster size in its engine's unit: '16 queries', '32 columns'."""
    unit = CLUSTER_UNIT.get(row["engine"])
    return f"{row['cluster_size']} {unit}" if unit else str(row["cluster_size"])


def _per_cluster(row: dict) -> str:
    """What the row's cluster size counts: 'queries per cluster', 'columns per cluster'."""
    unit = CLUSTER_UNIT.get(row["engine"])
    return f"{unit} per cluster" if unit else "cluster size"


def _opts(row: dict) -> str:
    flags = [
        row.get("opt_last"),
        row.get("opt_root"),
        row.get("opt_share"),
        row.get("prefix_sharing"),
    ]
    return "all on" if all(flags) else "all off" if not any(flags) else "mixed"


def _median(values: list[float]) -> float:
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def _grouped(rows, x: str, y: str, key=_series_label) -> dict:
    """{series: [(x, median y over the points sharing x)]} for rows that have both."""
    groups: dict = defaultdict(lambda: defaultdict(list))
    for row in rows:
        if row.get(x) is not None and row.get(y) is not None:
            groups[key(row)][row[x]].append(row[y])
    return {
        s: sorted((xv, _median(ys)) for xv, ys in pts.items()) for s, pts in sorted(groups.items())
    }


def pareto_front(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The (cost, value) points no other point beats on both (less or equal cost, more value),
    in increasing cost."""
    front: list[tuple[float, float]] = []
    for cost, value in sorted(points, key=lambda p: (p[0], -p[1])):
        if not front or value > front[-1][1]:
            front.append((cost, value))
    return front


def best_per_device(rows: list[dict]) -> dict[str, dict]:
    """{device: the ok row with the highest MB/s (fewer LUTs first among equals)}."""
    best: dict[str, dict] = {}
    for row in rows:
        if row.get("status") != "ok" or not row.get("throughput_MBps"):
            continue
        rank = (row["throughput_MBps"], -(row.get("luts") or 0))
        held = best.get(row["device"])
        if held is None or rank > (held["throughput_MBps"], -(held.get("luts") or 0)):
            best[row["device"]] = row
    return dict(sorted(best.items()))


#: A software baseline: (label, [(queries, MB/s)]).
Baseline = tuple[str, list[tuple[int, float]]]


def software_baselines(path: Union[str, Path]) -> list[Baseline]:
    """The software filters' MB/s against queries, from a result file in the format of
    ``bench/results/reference_throughput.json`` (rows with ``workload``, ``queries``,
    ``reference_MBps`` and ``lxml_MBps``; the NITF rows are taken)."""
    rows = [
        r
        for r in json.loads(Path(path).read_text()).get("rows", [])
        if str(r.get("workload", "")).startswith("NITF")
    ]
    out = []
    for name, column in (
        ("xpfilt reference (software)", "reference_MBps"),
        ("lxml, one query at a time", "lxml_MBps"),
    ):
        points = sorted((r["queries"], r[column]) for r in rows if r.get(column))
        if points:
            out.append((name, points))
    return out


def _plot(path: Path, panels: list[dict]) -> bool:
    """Draw ``panels`` (title, xlabel, ylabel, series {label: [(x, y)]}, optional lines,
    logx) side by side into ``path``; False if no panel has data."""
    if not any(p["series"] for p in panels):
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(6.4 * len(panels), 4.6), squeeze=False)
    for ax, panel in zip(axes[0], panels):
        for label, points in panel["series"].items():
            xs, ys = zip(*points)
            if panel.get("scatter"):  # points, and the series' front as a line of its colour
                (dots,) = ax.plot(xs, ys, marker="o", linestyle="none", alpha=0.45, label=label)
                fx, fy = zip(*pareto_front(points))
                ax.plot(fx, fy, marker="o", color=dots.get_color(), label=f"{label}: front")
            else:
                ax.plot(xs, ys, marker="o", label=label)
        for label, points in panel.get("lines", []):
            xs, ys = zip(*points)
            ax.plot(xs, ys, linestyle="--", color="grey", marker="x", label=label)
        ax.set_title(panel["title"])
        ax.set_xlabel(panel["xlabel"])
        ax.set_ylabel(panel["ylabel"])
        if panel.get("logx"):
            ax.set_xscale("log", base=2)
        if panel.get("logy"):
            ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
        if panel["series"] or panel.get("lines"):
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _table(header: list[str], rows: list[list]) -> str:
    def cell(v):
        if isinstance(v, float):
            return f"{v:,.3g}" if abs(v) < 1000 else f"{v:,.0f}"
        return "" if v is None else str(v)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v).replace("|", "\\|") for v in r) + " |" for r in rows]
    return "\n".join(lines)


class _Sections:
    """The report's sections in order, (title, markdown, image name or None), and its plots."""

    def __init__(self, folder: Path, report: Report):
        self.folder, self.report = folder, report
        self.items: list[tuple[str, str, Optional[str]]] = []

    def add(self, title: str, markdown: str) -> None:
        self.items.append((title, markdown, None))

    def figure(self, name: str, panels: list[dict], title: str, body, missing=None) -> None:
        """Plot ``panels`` into ``name`` and add section ``title`` with ``body()`` under the
        image; when no panel has data, the section ``missing`` = (title, what produces the
        metric) instead, if given."""
        image = self.folder / name
        if _plot(image, panels):
            self.items.append((title, body(), image.name))
            self.report.files.append(image)
        elif missing:
            self.items.append((*missing, None))


def write_report(
    sweep_dir: Union[str, Path],
    folder: Optional[Union[str, Path]] = None,
    *,
    baselines: Optional[Union[str, Path]] = None,
) -> Report:
    """Plots and summaries for the sweep in ``sweep_dir`` (see the module docstring);
    ``baselines``: a result file of software filters' MB/s (:func:`software_baselines`) drawn
    as reference lines in the throughput plot, none if not given."""
    from xpfilt.scale.store import SweepStore

    rows = SweepStore(sweep_dir).rows()
    if not rows:
        raise FileNotFoundError(
            f"{sweep_dir}: no sweep rows (engine=*/device=*/*.parquet) "
            "here; run `xpfilt sweep SPEC.yaml -o DIR` first"
        )
    folder = Path(folder) if folder else Path(sweep_dir) / REPORT_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    report = Report(folder, rows=len(rows))
    ok = [r for r in rows if r["status"] == "ok"]
    report.ok = len(ok)
    out = _Sections(folder, report)
    out.add("Overview", _overview(rows))
    with_fmax = [r for r in ok if r.get("fmax_mhz")]
    _fmax_figure(out, with_fmax)
    _resources_figure(out, ok, with_fmax)
    with_tp = [r for r in ok if r.get("throughput_MBps")]
    _throughput_figure(out, with_tp, Path(baselines) if baselines else None)
    _best_points_figure(out, [r for r in with_tp if r.get("luts")])
    _width_figure(out, ok, with_tp)
    _compiler_figure(out, ok)
    out.add("Every point", _every_point_table(ok))
    failed = [r for r in rows if r["status"] != "ok"]
    if failed:
        out.add("Failures", _failures_table(failed))
    report.files += _write_texts(folder, sweep_dir, out.items, rows)
    return report


def _overview(rows: list[dict]) -> str:
    """The points' statuses and which design point fields were swept or fixed."""
    statuses = defaultdict(int)
    for r in rows:
        statuses[r["status"]] += 1
    axes = {f: sorted({r[f] for r in rows if r.get(f) is not None}, key=str) for f in POINT_FIELDS}
    swept = [[f, ", ".join(map(str, v))] for f, v in axes.items() if len(v) > 1]
    fixed = [[f, v[0]] for f, v in axes.items() if len(v) == 1]
    return (
        f"{len(rows)} design points: "
        + ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))
        + ".\n\n"
        + "Swept:\n\n"
        + _table(["field", "values"], swept)
        + "\n\nFixed:\n\n"
        + _table(["field", "value"], fixed)
    )


def _fmax_figure(out: _Sections, with_fmax: list[dict]) -> None:
    """Fig. 9: Fmax vs cluster size."""
    series = _grouped(
        with_fmax,
        "cluster_size",
        "fmax_mhz",
        key=lambda r: f"{_series_label(r)} {_opts(r)} ({_per_cluster(r)})",
    )
    out.figure(
        "fmax_vs_cluster_size.png",
        [
            {
                "title": "Fmax vs cluster size (cf. paper Fig. 9)",
                "xlabel": "cluster size (custom: queries, programmable: columns per cluster)",
                "ylabel": "Fmax (MHz, nextpnr)",
                "series": series,
                "logx": True,
            }
        ],
        "Fmax vs cluster size",
        lambda: _table(
            ["series", "cluster size: Fmax MHz (median)"],
            [[s, ", ".join(f"{x}: {y:.1f}" for x, y in pts)] for s, pts in series.items()],
        ),
        (
            "Fmax vs cluster size",
            "No point has an Fmax: run the sweep with "
            "`place_and_route: true` and an `ecp5` or `ice40` device.",
        ),
    )


def _resources_figure(out: _Sections, ok: list[dict], with_fmax: list[dict]) -> None:
    """Fig. 10: resources and Fmax vs query nodes."""

    def per_node_table() -> str:
        per_node = defaultdict(list)
        for r in ok:
            if r.get("luts") and r.get("query_nodes"):
                per_node[(r["engine"], r["device"], _opts(r))].append(r["luts"] / r["query_nodes"])
        return _table(
            ["engine", "device", "optimizations", "LUTs per query node (median)", "points"],
            [[*k, _median(v), len(v)] for k, v in sorted(per_node.items())],
        )

    by_engine = lambda r: f"{r['engine']} {r['device']} {_opts(r)}"
    out.figure(
        "resources_vs_query_nodes.png",
        [
            {
                "title": "Resources vs query nodes (cf. Fig. 10)",
                "xlabel": "query nodes",
                "ylabel": "LUTs (LUT6-eq. xilinx, LUT4 ecp5/ice40)",
                "series": _grouped(
                    [r for r in ok if r.get("luts")], "query_nodes", "luts", key=by_engine
                ),
                "logx": True,
                "logy": True,
            },
            {
                "title": "Fmax vs query nodes",
                "xlabel": "query nodes",
                "ylabel": "Fmax (MHz)",
                "series": _grouped(with_fmax, "query_nodes", "fmax_mhz", key=by_engine),
                "logx": True,
            },
        ],
        "Resources and Fmax vs query nodes",
        per_node_table,
        (
            "Resources vs query nodes",
            "No point has resource counts: run the sweep with `synthesize: true`.",
        ),
    )


def _throughput_figure(out: _Sections, with_tp: list[dict], baseline_file: Optional[Path]) -> None:
    """Fig. 11: throughput vs queries, with the software filters' throughput (the result file
    ``baseline_file``, if given) as lines."""
    software_lines = software_baselines(baseline_file) if baseline_file else []

    def best_table() -> str:
        best = sorted(with_tp, key=lambda r: -r["throughput_MBps"])[:10]
        note = (
            f"Dashed lines: software filters ({baseline_file.name}).\n\n" if software_lines else ""
        )
        return note + _table(
            [
                "engine",
                "device",
                "queries",
                "depth",
                "cluster size",
                "opts",
                "bytes/cycle",
                "Fmax MHz",
                "MB/s",
            ],
            [
                [
                    r["engine"],
                    r["device"],
                    r["queries"],
                    r["depth"],
                    _cluster(r),
                    _opts(r),
                    r["bytes_per_cycle"],
                    r["fmax_mhz"],
                    r["throughput_MBps"],
                ]
                for r in best
            ],
        )

    out.figure(
        "throughput_vs_queries.png",
        [
            {
                "title": "Throughput vs number of queries (cf. Fig. 11)",
                "xlabel": "queries",
                "ylabel": "MB/s (bytes/cycle x Fmax)",
                "series": _grouped(
                    with_tp,
                    "queries",
                    "throughput_MBps",
                    key=lambda r: f"{_series_label(r)} {_opts(r)}",
                ),
                "lines": software_lines,
                "logx": True,
                "logy": True,
            }
        ],
        "Throughput vs queries (best 10 points)",
        best_table,
        (
            "Throughput vs queries",
            "No point has a throughput (it needs an Fmax): run the "
            "sweep with `place_and_route: true`.",
        ),
    )


def _best_points_figure(out: _Sections, with_cost: list[dict]) -> None:
    """The answer: which point is best on each device, and what each LUT buys."""

    def best_points_table() -> str:
        return (
            "The best point per device (highest MB/s, fewer LUTs among equals); lines in "
            "the plot are each device and engine's Pareto front.\n\n"
            + _table(
                [
                    "device",
                    "engine",
                    "queries",
                    "depth",
                    "cluster size",
                    "opts",
                    "W",
                    "LUTs",
                    "Fmax MHz",
                    "MB/s",
                ],
                [
                    [
                        device,
                        r["engine"],
                        r["queries"],
                        r["depth"],
                        _cluster(r),
                        _opts(r),
                        r.get("beat_bytes") or 1,
                        r["luts"],
                        r["fmax_mhz"],
                        r["throughput_MBps"],
                    ]
                    for device, r in best_per_device(with_cost).items()
                ],
            )
        )

    scatter: dict = defaultdict(list)
    for r in with_cost:
        scatter[f"{r['engine']} {r['device']}"].append((r["luts"], r["throughput_MBps"]))
    out.figure(
        "pareto_throughput_vs_luts.png",
        [
            {
                "title": "MB/s vs LUTs: Pareto front per device and engine",
                "xlabel": "LUTs",
                "ylabel": "MB/s (bytes/cycle x Fmax)",
                "series": dict(sorted(scatter.items())),
                "scatter": True,
                "logx": True,
            }
        ],
        "Best point per device",
        best_points_table,
        (
            "Best point per device",
            "No point has both LUTs and a throughput: run the sweep "
            "with `synthesize: true` and `place_and_route: true`.",
        ),
    )


def _width_figure(out: _Sections, ok: list[dict], with_tp: list[dict]) -> None:
    """Issue 18: the input width W (rows stored before the axis existed have W = 1); no
    section when every point has W = 1."""
    if not any((r.get("beat_bytes") or 1) > 1 for r in ok):
        return
    width = lambda r: r.get("beat_bytes") or 1
    by_design = lambda r: f"{r['engine']} {r['device']} {r['queries']} queries d{r['depth']}"

    def width_table() -> str:
        return _table(
            ["design", "W", "bytes/cycle", "Fmax MHz", "MB/s"],
            [
                [
                    by_design(r),
                    width(r),
                    r.get("bytes_per_cycle"),
                    r.get("fmax_mhz"),
                    r.get("throughput_MBps"),
                ]
                for r in sorted(ok, key=lambda r: (by_design(r), width(r)))
            ],
        )

    panels = [
        {
            "title": "MB/s vs input width W",
            "xlabel": "W (bytes per cycle offered)",
            "ylabel": "MB/s (bytes/cycle x Fmax)",
            "series": _grouped(
                [{**r, "W": width(r)} for r in with_tp], "W", "throughput_MBps", key=by_design
            ),
            "logx": True,
        }
    ]
    panels = [p for p in panels if p["series"]]  # no Fmax: the model's panel only
    out.figure(
        "throughput_vs_bytes_per_cycle.png",
        [
            *panels,
            {
                "title": "Sustained input vs W (cycle-accurate model)",
                "xlabel": "W (bytes per cycle offered)",
                "ylabel": "bytes per cycle",
                "series": _grouped(
                    [{**r, "W": width(r)} for r in ok if r.get("bytes_per_cycle")],
                    "W",
                    "bytes_per_cycle",
                    key=by_design,
                ),
                "logx": True,
            },
        ],
        "Throughput vs input width W",
        width_table,
    )


def _compiler_figure(out: _Sections, ok: list[dict]) -> None:
    """What the compiler alone says (every point has it, synthesized or not)."""
    out.figure(
        "columns_vs_query_nodes.png",
        [
            {
                "title": "Stack columns vs query nodes (compiler, no synthesis)",
                "xlabel": "query nodes",
                "ylabel": "columns (custom: after optimizations)",
                "series": _grouped(
                    [r for r in ok if r.get("columns")],
                    "query_nodes",
                    "columns",
                    key=lambda r: f"{r['engine']} d{r['depth']} {_cluster(r)}/cluster {_opts(r)}",
                ),
                "logx": True,
                "logy": True,
            },
            {
                "title": "Sustained input (cycle-accurate model)",
                "xlabel": "queries",
                "ylabel": "bytes per cycle",
                "series": _grouped(
                    [r for r in ok if r.get("bytes_per_cycle")],
                    "queries",
                    "bytes_per_cycle",
                    key=lambda r: f"{r['engine']} d{r['depth']} {_cluster(r)}/cluster",
                ),
                "logx": True,
            },
        ],
        "Columns and bytes per cycle (no synthesis needed)",
        lambda: (
            "Columns: the custom engine's stack columns after the column optimizations "
            "(programmable: the generic columns provided). Bytes per cycle below 1.0: "
            "cycles the input waited for the serial readout."
        ),
    )


def _every_point_table(ok: list[dict]) -> str:
    """The model-only numbers every ok point has, and what synthesis added."""
    model = sorted(ok, key=lambda r: (r["engine"], r["depth"], r["queries"], r["cluster_size"]))
    return _table(
        [
            "engine",
            "device",
            "queries",
            "depth",
            "cluster",
            "opts",
            "nodes",
            "columns",
            "clusters",
            "bytes/cycle",
            "LUTs",
            "FFs",
            "Fmax",
            "MB/s",
            "s",
        ],
        [
            [
                r["engine"],
                r["device"],
                r["queries"],
                r["depth"],
                _cluster(r),
                _opts(r),
                r.get("query_nodes"),
                r.get("columns"),
                r.get("clusters"),
                r.get("bytes_per_cycle"),
                r.get("luts"),
                r.get("ffs"),
                r.get("fmax_mhz"),
                r.get("throughput_MBps"),
                r.get("seconds"),
            ]
            for r in model
        ],
    )


def _failures_table(failed: list[dict]) -> str:
    return _table(
        ["status", "engine", "device", "queries", "depth", "cluster", "reason"],
        [
            [
                r["status"],
                r["engine"],
                r["device"],
                r["queries"],
                r["depth"],
                _cluster(r),
                r["reason"],
            ]
            for r in failed
        ],
    )


def _write_texts(folder: Path, sweep_dir, sections, rows) -> list[Path]:
    title = f"xpfilt sweep report: {Path(sweep_dir).resolve().name}"
    md = [f"# {title}", ""]
    for name, body, image in sections:
        md += [f"## {name}", ""]
        if image:
            md += [f"![{name}]({image})", ""]
        md += [body, ""]
    summary = folder / "summary.md"
    summary.write_text("\n".join(md))

    page = [
        f"<!doctype html><meta charset='utf-8'><title>{html.escape(title)}</title>",
        "<style>body{font-family:sans-serif;max-width:1300px;margin:2em auto}"
        "table{border-collapse:collapse;font-size:90%}td,th{border:1px solid #ccc;"
        "padding:2px 6px}img{max-width:100%}</style>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    for name, body, image in sections:
        page.append(f"<h2>{html.escape(name)}</h2>")
        if image:
            page.append(f"<img src='{image}' alt='{html.escape(name)}'>")
        page.append(_markdown_to_html(body))
    index = folder / "index.html"
    index.write_text("\n".join(page))

    table = folder / "rows.csv"
    columns = list(dict.fromkeys(k for r in rows for k in r))
    with open(table, "w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    return [summary, index, table]


def _markdown_to_html(text: str) -> str:
    """The small Markdown subset the sections use: paragraphs and pipe tables."""
    out, table = [], []

    def flush():
        if table:
            head, *body = [r for r in table if not set(r.replace("|", "")) <= set("-: ")]
            cells = lambda r: [c.strip().replace("\\|", "|") for c in r.strip("|").split(" | ")]
            out.append(
                "<table><tr>"
                + "".join(f"<th>{html.escape(c)}</th>" for c in cells(head))
                + "</tr>"
                + "".join(
                    "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells(r)) + "</tr>"
                    for r in body
                )
                + "</table>"
            )
            table.clear()

    for line in text.splitlines():
        if line.startswith("|"):
            table.append(line)
            continue
        flush()
        if line.strip():
            out.append(f"<p>{html.escape(line).replace('`', '')}</p>")
    flush()
    return "\n".join(out)
