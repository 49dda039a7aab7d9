"""cocotb testbench of the programmable engine (``xpfilt_engine`` from
:func:`xpfilt.hdl.verilog.emit_programmable_verilog`, see :class:`xpfilt.hdl.programmable.ProgrammableEngine`).

The host (:func:`xpfilt.verify.regress.run_regression` with ``mode="programmable"``) hands a sequence of
*items* in ``TbConfig.extra["items"]``: runs of documents and configuration streams (good ones,
and corrupt or truncated ones that the engine must reject). Items are sent in order: a stream is
sent whole (one bit per ``config`` transfer, random valid gaps with probability ``p_valid``,
honouring ``config.ready``) after the previous document's last byte was accepted and before the
next document's first byte is offered -- unless the stream's item says ``"overlap"``: then it
is sent while the next run of documents streams, so it completes with documents in flight; the
documents whose first byte was accepted up to its last bit are answered by the previous
configuration, the later ones by the new (the commit waits for a document boundary). The :class:`xpfilt.sim.engine_tb.Driver` /
:class:`xpfilt.sim.engine_tb.Monitor` pieces drive ``bytes_in`` and ``readout`` as for the custom engine.

After the run, :mod:`xpfilt.sim.programmable_checker` compares every cycle's ``bytes_in.ready``, readout
beat, ``config.ready`` and ``config_status`` with
:class:`xpfilt.model.programmable.ProgrammableModel`, and every document's answer with the
reference filter over the queries of the configuration active when it streamed (the last good
stream before it; none yet: every readout bit 0). It also checks, independently of the model,
that the cycle after each stream's last bit shows ``pending`` (good stream) or ``rejected``
(bad), and that the final ``generation`` counts the good streams.

Timing as in :mod:`xpfilt.sim.engine_tb`: the outputs depend on registers only; they are sampled at the
falling edge and the inputs of the same cycle written right after.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import cocotb
from cocotb.triggers import Timer

from xpfilt.compiler.programmable import HardwareSpec, answer_from_json
from xpfilt.hwspec.contract import CONFIG_INPUT_CYCLES
from xpfilt.hwspec.readout import ReadoutKind
from xpfilt.lang.xpath import parse_query
from xpfilt.sim.checker import BeatCodec, byte_payload, expectation, reference_for, root_cause_first
from xpfilt.sim.config import CONFIG_ENV, TbConfig
from xpfilt.sim.engine_tb import (
    _BLOCK,
    PERIOD_NS,
    Driver,
    Monitor,
    _Pattern,
    _reader,
    finish_run,
    start_engine,
)
from xpfilt.sim.programmable_checker import (
    FAULTS,
    ProgTrace,
    compare_programmable_with_model,
    config_payload,
    decode_status,
    score_programmable,
    stream_bits,
)


class ConfigDriver:
    """Sends configuration streams into ``config``, one bit per transfer, random valid gaps."""

    def __init__(self, dut, seed: int, p_valid: float):
        self.pattern = _Pattern(f"{seed}/config", p_valid)
        self.valid_h, self.payload_h = dut.config__valid, dut.config__payload
        self.read_ready = _reader(dut.config__ready)
        self.read_status = _reader(dut.config_status)
        self.valid_h.value = 0
        self.payload_h.value = 0


def _phases(items: list[dict], documents: list[bytes]) -> list[tuple[str, list[int]]]:
    """The items as phases: ("doc", byte payloads of a run of documents), ("cfg", config
    payloads of one stream) or ("both", byte payloads, config payloads) for an overlapping
    stream and the documents after it."""
    phases = []
    for item in items:
        if item["kind"] == "documents":
            stream = [
                byte_payload(b, i == len(documents[d]) - 1)
                for d in item["documents"]
                for i, b in enumerate(documents[d])
            ]
            if phases and phases[-1][0] == "both" and not phases[-1][1]:
                phases[-1] = ("both", stream, phases[-1][2])
            elif stream:
                phases.append(("doc", stream))
        else:
            bits = stream_bits(Path(item["stream"]).read_bytes())
            payloads = [config_payload(b, i == len(bits) - 1) for i, b in enumerate(bits)]
            phases.append(("both", [], payloads) if item.get("overlap") else ("cfg", payloads))
    return phases


async def run_items(
    dut,
    phases,
    driver: Driver,
    cfg: ConfigDriver,
    monitor: Monitor,
    trace: ProgTrace,
    *,
    idle_cycles: int,
    stall_limit: int,
    documents: int,
) -> tuple[str, int]:
    """Clock the engine through every phase and until every document is read out (plus
    ``idle_cycles``). Returns ("" or why it stopped early, bytes accepted)."""
    draws = {
        "valid": driver.pattern.extend(_BLOCK),
        "cfg": cfg.pattern.extend(_BLOCK),
        "ready": monitor.pattern.extend(_BLOCK),
    }
    read_ready, read_valid, read_payload = (
        driver.read_ready,
        monitor.read_valid,
        monitor.read_payload,
    )
    read_cfg_ready, read_status = cfg.read_ready, cfg.read_status
    valid_h, payload_h, oready_h = driver.valid_h, driver.payload_h, monitor.ready_h
    cvalid_h, cpayload_h = cfg.valid_h, cfg.payload_h
    t = trace
    last_bit = byte_payload(0, True)
    tick = Timer(PERIOD_NS, unit="ns")

    def streams_of(k):  # (document byte payloads, configuration payloads) of phase k
        if k >= len(phases):
            return [], []
        kind, *parts = phases[k]
        return {"doc": (parts[0], []), "cfg": ([], parts[0]), "both": tuple(parts)}[kind]

    phase, dpos, cpos = 0, 0, 0
    doc_stream, cfg_stream = streams_of(0)
    accepted = readouts = 0
    in_document = False
    cur = {"valid": 0, "payload": 0, "oready": 0, "cvalid": 0, "cpayload": 0}
    progress = 0
    finished_at = None
    cycle = 0
    while True:
        ready = read_ready()
        beat = read_payload() if read_valid() else -1
        cfg_ready = read_cfg_ready()
        status = read_status()
        if cycle >= len(draws["valid"]):
            draws = {
                "valid": driver.pattern.extend(cycle + 1),
                "cfg": cfg.pattern.extend(cycle + 1),
                "ready": monitor.pattern.extend(cycle + 1),
            }
        sending, csending = dpos < len(doc_stream), cpos < len(cfg_stream)
        valid = draws["valid"][cycle] if sending else 0
        cvalid = draws["cfg"][cycle] if csending else 0
        payload = doc_stream[dpos] if sending else cur["payload"]
        cpayload = cfg_stream[cpos] if csending else cur["cpayload"]
        out_ready = draws["ready"][cycle]
        if valid != cur["valid"]:
            valid_h.value = cur["valid"] = valid
        if payload != cur["payload"]:
            payload_h.value = cur["payload"] = payload
        if out_ready != cur["oready"]:
            oready_h.value = cur["oready"] = out_ready
        if cvalid != cur["cvalid"]:
            cvalid_h.value = cur["cvalid"] = cvalid
        if cpayload != cur["cpayload"]:
            cpayload_h.value = cur["cpayload"] = cpayload
        t.valid.append(valid)
        t.payload.append(payload)
        t.out_ready.append(out_ready)
        t.ready.append(ready)
        t.beat.append(beat)
        t.cfg_valid.append(cvalid)
        t.cfg_payload.append(cpayload)
        t.cfg_ready.append(cfg_ready)
        t.status.append(status)
        if valid and ready:
            progress = cycle
            accepted += 1
            if not in_document:
                t.doc_first_cycle.append(cycle)
            in_document = not payload & last_bit
            if not in_document:
                t.doc_last_cycle.append(cycle)
            dpos += 1
        if cvalid and cfg_ready:
            progress = cycle
            cpos += 1
            if cpos == len(cfg_stream):
                t.cfg_end_cycle.append(cycle)
        if phase < len(phases) and dpos >= len(doc_stream) and cpos >= len(cfg_stream):
            phase, dpos, cpos = phase + 1, 0, 0
            doc_stream, cfg_stream = streams_of(phase)
        if beat >= 0 and out_ready:
            progress = cycle
            if beat & monitor.last_mask:
                readouts += 1
        cycle += 1
        await tick
        if finished_at is None:
            if phase >= len(phases) and readouts >= documents:
                finished_at = cycle
            elif cycle - progress > stall_limit:
                return (
                    f"no progress for {stall_limit} cycles at cycle {cycle}: phase "
                    f"{phase}/{len(phases)}, {readouts}/{documents} documents "
                    f"read out"
                ), accepted
        if finished_at is not None and cycle >= finished_at + idle_cycles:
            break
    return "", accepted


@cocotb.test()
async def programmable_engine_matches_model_and_reference(dut):
    """Every cycle (data, readout, config port, status) equals the model; every document's
    answer equals the reference of the configuration active when it streamed."""
    config = TbConfig.read(Path(os.environ[CONFIG_ENV]))
    if config.fault is not None and config.fault not in FAULTS:
        raise ValueError(f"fault must be one of {', '.join(FAULTS)}, not {config.fault!r}")
    spec = HardwareSpec.from_json(Path(config.plan).read_text())
    items = config.extra["items"]
    query_sets = config.extra["query_sets"]
    names = [name for name, _ in config.documents]
    documents = [Path(path).read_bytes() for _, path in config.documents]
    phases = _phases(items, documents)

    codec = BeatCodec(ReadoutKind(spec.readout), spec.readout_width)
    cfg = ConfigDriver(dut, config.seed, config.p_valid)
    driver, monitor = await start_engine(dut, config, [], codec)

    trace = ProgTrace()
    start = time.perf_counter()
    stopped, accepted = await run_items(
        dut,
        phases,
        driver,
        cfg,
        monitor,
        trace,
        idle_cycles=config.idle_cycles,
        stall_limit=config.stall_limit,
        documents=len(documents),
    )
    sim_time = time.perf_counter() - start

    start = time.perf_counter()
    cycles = compare_programmable_with_model(spec, trace, fault=config.fault)
    # the configuration active for each document, by the host's order of items: item "set"
    # is a placement (query set, [(where, query number)]) the host made
    sets = {}
    for i, (k, pairs) in enumerate(config.extra["placements"]):
        numbers = {n for _, n in pairs}
        placed = [parse_query(text, n) for n, text in query_sets[k] if n in numbers]
        sets[i] = (reference_for(placed), [(answer_from_json(w), n) for w, n in pairs])
    empty = reference_for([])
    active, answer_maps, expected, doc_sets, mismatches = None, [], [], [], []
    config_items = []
    switch = None  # (set, cycle of its last bit): an overlapping good stream not yet active
    for item in items:
        if item["kind"] == "config":
            config_items.append(item)
            if switch is not None:
                active, switch = switch[0], None
            if item["set"] is not None:
                if item.get("overlap"):
                    ends = trace.cfg_end_cycle
                    end = ends[len(config_items) - 1] if len(config_items) <= len(ends) else -1
                    switch = (item["set"], end)
                else:
                    active = item["set"]
            continue
        for d in item["documents"]:
            if (
                switch is not None
                and d < len(trace.doc_first_cycle)
                and trace.doc_first_cycle[d] > switch[1]
            ):
                active, switch = switch[0], None
            (reference, numbers), answers = sets[active] if active is not None else (empty, None)
            expected.append(
                expectation(
                    reference,
                    numbers,
                    documents[d],
                    max_depth=spec.max_depth,
                    max_name=spec.max_name,
                )
            )
            answer_maps.append(answers)
            doc_sets.append(active)
    if config.fault == "reference":
        for i, exp in enumerate(expected):
            if exp.numbers is not None and answer_maps[i]:
                victim = min(n for _, n in answer_maps[i])
                expected[i] = type(exp)(
                    tuple(sorted(set(exp.numbers) ^ {victim})),
                    exp.must_flag,
                    "fault injected: reference answer changed",
                )
                break
    results, doc_mismatches = score_programmable(
        spec.readout_width, names, expected, trace.transferred(codec), answer_maps
    )
    for r, i in zip(results, doc_sets):
        r["configuration"] = (
            None if i is None else config.extra["set_labels"][config.extra["placements"][i][0]]
        )
    # the loader's verdict on each stream, independently of the model
    good = 0
    streams = []
    for k, item in enumerate(config_items):
        if k >= len(trace.cfg_end_cycle):
            break
        c = trace.cfg_end_cycle[k] + 1 + CONFIG_INPUT_CYCLES
        seen = decode_status(trace.status[c]) if c < len(trace.status) else None
        verdict = (
            None
            if seen is None
            else (
                "accepted"
                if seen["pending"] and not seen["rejected"]
                else "rejected"
                if seen["rejected"]
                else "neither"
            )
        )
        want = "rejected" if item["set"] is None else "accepted"
        good += item["set"] is not None
        streams.append(
            {
                "label": item["label"],
                "bits": len(stream_bits(Path(item["stream"]).read_bytes())),
                "verdict": verdict,
                "expected": want,
                "end_cycle": trace.cfg_end_cycle[k],
            }
        )
        if verdict != want:
            mismatches.append(
                {
                    "kind": "stream",
                    "document": trace.document_at(c),
                    "name": item["label"],
                    "detail": f"stream {item['label']!r}: the status after its last "
                    f"bit says {verdict} ({seen}), not {want}",
                }
            )
    if trace.status:
        final = decode_status(trace.status[-1])
        if final["generation"] != good % 256 or final["loaded"] != int(good > 0):
            mismatches.append(
                {
                    "kind": "stream",
                    "document": len(names) - 1,
                    "name": names[-1] if names else "",
                    "detail": f"final status {final}: {good} good streams were sent",
                }
            )
    mismatches.extend(doc_mismatches)
    check_time = time.perf_counter() - start
    mismatches = root_cause_first(mismatches, trace, names, stopped, cycles)
    finish_run(
        dut,
        config,
        trace,
        cycles,
        accepted,
        sim_time,
        check_time,
        results,
        mismatches,
        config_bits=sum(1 for v, r in zip(trace.cfg_valid, trace.cfg_ready) if v and r),
        config_stalls=sum(1 for v, r in zip(trace.cfg_valid, trace.cfg_ready) if v and not r),
        streams=streams,
        final_status=decode_status(trace.status[-1]) if trace.status else None,
    )
