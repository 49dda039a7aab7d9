"""Rerun a configuration or RTL case from its replay folder (``python -m xpfilt.verify.fuzz --replay``).

Document cases (categories 1 and 2) replay with the ``xpfilt filter`` command in ``what.txt``.
"""

from __future__ import annotations

import json
from pathlib import Path

from xpfilt.compiler.custom import Plan
from xpfilt.compiler.programmable import HardwareSpec
from xpfilt.model.custom import run_documents
from xpfilt.model.programmable import ProgrammableModel, load_configuration
from xpfilt.verify.fuzz.rtl import Segment, group_readouts, run_stream


def replay(folder: Path) -> int:
    folder = Path(folder)
    case = json.loads((folder / "case.json").read_text())
    if case["kind"] == "config":
        return _replay_config(folder)
    return _replay_stream(folder, case)


def _docs(folder: Path, prefix: str = "doc") -> list[bytes]:
    return [p.read_bytes() for p in sorted(folder.glob(f"{prefix}*.xml"))]


def _replay_config(folder: Path) -> int:
    spec = HardwareSpec.from_json((folder / "hardware.json").read_text())
    docs = _docs(folder)
    model = ProgrammableModel(spec)
    load_configuration(model, (folder / "config-a.bin").read_bytes())
    print(f"after config-a.bin: {model.status}")
    before = [r.bits for r in run_documents(model, docs)]
    print(f"readout bits: {[hex(b) for b in before]}")
    load_configuration(model, (folder / "config-bad.bin").read_bytes())
    print(f"after config-bad.bin: {model.status} (must be rejected, same generation)")
    after = [r.bits for r in run_documents(model, docs)]
    print(f"readout bits: {[hex(b) for b in after]} (must equal the ones above)")
    ok = model.status["rejected"] == 1 and after == before
    if (folder / "config-b.bin").exists() and (folder / "config-b.bin").stat().st_size:
        load_configuration(model, (folder / "config-b.bin").read_bytes())
        print(f"after config-b.bin: {model.status} (must be accepted)")
        ok &= model.status["rejected"] == 0
        print(
            "readout bits: "
            f"{[hex(r.bits) for r in run_documents(model, docs)]} (compare: xpfilt filter -q "
            "queries-b.txt --engine model --mode programmable --hw . doc*.xml)"
        )
    print("OK" if ok else "FAILS")
    return 0 if ok else 1


def _replay_stream(folder: Path, case: dict) -> int:
    kind = case["kind"]
    if kind == "custom":
        design = Plan.from_json((folder / "plan.json").read_text())
    else:
        design = HardwareSpec.from_json((folder / "hardware.json").read_text())
    docs = _docs(folder)
    segments, k = [], 0
    for s, (ndocs, has_config, delay) in enumerate(case["segments"]):
        config = (folder / f"config-{s}.bin").read_bytes() if has_config else None
        segments.append(Segment(docs[k : k + ndocs], config, delay))
        k += ndocs
    run = run_stream(
        kind,
        design,
        segments,
        seed=case["seed"],
        p_valid=case["p_valid"],
        p_ready=case["p_ready"],
        rtl=case.get("rtl", True),
    )
    width = design.readout_width if kind == "programmable" else len(design.query_numbers)
    print(f"{kind} engine, {len(docs)} documents, {run.cycles} cycles")
    if run.mismatch:
        print(
            f"RTL and model differ first at cycle {run.mismatch['cycle']}: "
            f"RTL {run.mismatch['rtl']}, model {run.mismatch['model']}"
        )
    ok = run.mismatch is None
    for side, beats in (("model", run.model_beats), ("RTL", run.rtl_beats)):
        if side == "RTL" and not case.get("rtl", True):
            continue
        readouts, framing = group_readouts(beats, width)
        print(
            f"{side}: {len(readouts)} readouts for {len(docs)} documents"
            f"{f', {framing} framing errors' if framing else ''}"
        )
        for doc, errors, bits in readouts:
            print(f"  document {doc}: errors {errors}, bits {bits:#x}")
        ok &= len(readouts) == len(docs) and not framing
    print("OK" if ok else "FAILS (see what.txt for the expected answers)")
    return 0 if ok else 1
