"""``python -m xpfilt.verify.fuzz [--cases-scale X] [--seed S] [--out bench/results]``, and
``python -m xpfilt.verify.fuzz --replay FOLDER`` to rerun a failing case from its replay folder."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from xpfilt.verify.fuzz import DEFAULT_COUNTS, FuzzConfig, run_fuzz


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m xpfilt.verify.fuzz",
        description="Fuzz every engine: random well-formed cases, hostile documents, corrupted "
        "configuration streams, back-to-back streams through the RTL. Writes "
        "fuzz.md and fuzz.json; exit code 1 if anything failed.",
    )
    parser.add_argument(
        "--cases-scale",
        type=float,
        default=1.0,
        help="multiply every category's case count (default counts: "
        + ", ".join(f"{k} {v:,}" for k, v in DEFAULT_COUNTS.items())
        + ")",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("bench/results"),
        help="folder for fuzz.md and fuzz.json (default: bench/results)",
    )
    parser.add_argument(
        "--replay-dir",
        type=Path,
        default=Path("build/fuzz"),
        help="folder for the replay folders of failing cases",
    )
    parser.add_argument(
        "--replays-per-class",
        type=int,
        default=5,
        help="replay folders written per failure class (all are counted)",
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=list(DEFAULT_COUNTS),
        help="run only this category (repeatable)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        help="seconds an engine may take on one document before it counts as a hang",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    parser.add_argument(
        "--replay",
        type=Path,
        metavar="FOLDER",
        help="rerun the configuration or RTL case in FOLDER and print what "
        "differs (documents: run the xpfilt filter command in what.txt)",
    )
    args = parser.parse_args(argv)
    # an RTL that fails to elaborate is counted as a crash; its half-built parts need no warning
    warnings.filterwarnings("ignore", message=".*created but never used")
    if args.replay:
        from xpfilt.verify.fuzz.replay import replay

        return replay(args.replay)
    config = FuzzConfig(
        seed=args.seed,
        cases_scale=args.cases_scale,
        out=args.out,
        replay_dir=args.replay_dir,
        replays_per_class=args.replays_per_class,
        categories=tuple(args.only or DEFAULT_COUNTS),
        timeout=args.timeout,
        progress=not args.quiet,
    )
    summary = run_fuzz(config)
    _print_table(summary)
    print(
        f"summary: {args.out / 'fuzz.md'}, {args.out / 'fuzz.json'}; replay folders under "
        f"{args.replay_dir}/",
        file=sys.stderr,
    )
    return 1 if summary["failure_classes"] else 0


def _print_table(summary: dict) -> None:
    rows = [("category", "cases", "documented", "failures", "failed cases")]
    for key, c in summary["categories"].items():
        rows.append(
            (
                key,
                f"{c['cases']:,}",
                f"{sum(c['documented_differences'].values()):,}",
                f"{sum(c['failures'].values()):,}",
                f"{c['failed_cases']:,}",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print(
            "  ".join(
                v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths))
            )
        )
    if summary["failure_classes"]:
        print("\nfailure classes:")
        for f in summary["failure_classes"]:
            known = f" [{f['known']}]" if f["known"] else " [new]"
            print(f"  {f['count']:>7,}  {f['category']}: {f['class']}{known}")
    print(
        f"\nwall time {summary['wall_seconds']:,.0f} s; "
        f"{'PASS' if not summary['failure_classes'] else 'FAIL'}"
    )


if __name__ == "__main__":
    sys.exit(main())
