"""The scoring half of the programmable engine's cocotb testbench (:mod:`xpfilt.sim.programmable_tb`),
in plain Python (no simulator needed).

It extends :mod:`xpfilt.sim.checker` (custom engine) with the configuration port:

* :class:`ProgTrace` is a :class:`xpfilt.sim.checker.Trace` that also records, per cycle, what the host
  drove into ``config`` (valid, payload = {bit, last}) and what the engine showed on
  ``config__ready`` and ``config_status``;
* :func:`compare_programmable_with_model` steps
  :class:`xpfilt.model.programmable.ProgrammableModel` with the trace's inputs and compares every
  cycle's ``bytes_in.ready``, readout beat, ``config.ready`` and ``config_status``;
* :func:`score_programmable` groups the transferred beats into documents and scores each one
  against the reference of the configuration active when it was streamed (no configuration yet:
  every readout bit must be 0), reusing :func:`xpfilt.sim.checker.score_documents`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Optional, Sequence

from amaranth.lib import data

from xpfilt.compiler.programmable import HardwareSpec
from xpfilt.hdl.programmable import ConfigBit, ConfigStatus
from xpfilt.model.custom import answers_in
from xpfilt.model.programmable import ProgrammableModel
from xpfilt.sim.checker import (
    BYTE_FIELDS,
    BeatCodec,
    Expectation,
    Trace,
    describe_cycle,
    score_documents,
)

__all__ = [
    "STATUS_FIELDS",
    "CONFIG_FIELDS",
    "encode_status",
    "decode_status",
    "config_payload",
    "stream_bits",
    "ProgTrace",
    "compare_programmable_with_model",
    "score_programmable",
    "FAULTS",
]

#: (offset, width) of each field of ``config_status`` (:class:`xpfilt.hdl.programmable.ConfigStatus`).
STATUS_FIELDS = {name: (f.offset, f.width) for name, f in data.Layout.cast(ConfigStatus)}
#: (offset, width) of each field of ``config__payload`` (:class:`xpfilt.hdl.programmable.ConfigBit`).
CONFIG_FIELDS = {name: (f.offset, f.width) for name, f in data.Layout.cast(ConfigBit)}

#: Test hooks (see :data:`xpfilt.sim.checker.FAULTS`); ``status`` claims the model's ``generation``
#: is one higher in the first cycle after the first commit.
FAULTS = ("model", "reference", "status")

_LAST_SHIFT = BYTE_FIELDS["last"][0]
_DATA_SHIFT = BYTE_FIELDS["data"][0]
_CFG_BIT = CONFIG_FIELDS["bit"][0]
_CFG_LAST = CONFIG_FIELDS["last"][0]


def encode_status(status: dict) -> int:
    """A model status dict as the integer the RTL shows on ``config_status``."""
    return sum((int(status[name]) & ((1 << w) - 1)) << o for name, (o, w) in STATUS_FIELDS.items())


def decode_status(value: int) -> dict:
    return {name: (value >> o) & ((1 << w) - 1) for name, (o, w) in STATUS_FIELDS.items()}


def config_payload(bit: int, last: bool) -> int:
    """The ``config__payload`` value of one stream bit."""
    return (bit & 1) << _CFG_BIT | int(last) << _CFG_LAST


def stream_bits(stream: bytes) -> list[int]:
    """The bits of a configuration stream in transfer order (LSB of byte 0 first)."""
    return [stream[i // 8] >> (i % 8) & 1 for i in range(len(stream) * 8)]


@dataclass
class ProgTrace(Trace):
    """:class:`Trace` plus the configuration port: ``cfg_valid``/``cfg_payload`` driven
    (payload as :func:`config_payload`), ``cfg_ready``/``status`` seen (status as the raw
    ``config_status`` integer); ``cfg_end_cycle[k]``: the cycle whose transfer ended the k-th
    configuration stream; ``doc_first_cycle[n]``: the cycle whose transfer was document ``n``'s
    first byte."""

    cfg_valid: list = field(default_factory=list)
    cfg_payload: list = field(default_factory=list)
    cfg_ready: list = field(default_factory=list)
    status: list = field(default_factory=list)
    cfg_end_cycle: list = field(default_factory=list)
    doc_first_cycle: list = field(default_factory=list)


def compare_programmable_with_model(
    spec: HardwareSpec, trace: ProgTrace, *, fault: Optional[str] = None
) -> dict:
    """Step the model with the trace's inputs; compare every cycle's ``bytes_in.ready``,
    readout beat, ``config.ready`` and ``config_status``. Same result shape as
    :func:`xpfilt.sim.checker.compare_with_model` (``first`` also has both sides' config port)."""
    model = ProgrammableModel(spec)
    codec = BeatCodec(model.readout_kind, model.width)
    step = model.step
    data_mask = (1 << BYTE_FIELDS["data"][1]) - 1
    faulty = fault == "model"
    bump_status = fault == "status"
    first = None
    bad = 0
    for c, (valid, payload, out_ready, ready, beat, cv, cp, c_ready, status) in enumerate(
        zip(
            trace.valid,
            trace.payload,
            trace.out_ready,
            trace.ready,
            trace.beat,
            trace.cfg_valid,
            trace.cfg_payload,
            trace.cfg_ready,
            trace.status,
        )
    ):
        m_status = model.status
        m_ready, m_beat = step(
            valid,
            (payload >> _DATA_SHIFT) & data_mask,
            bool(payload >> _LAST_SHIFT & 1),
            out_ready,
            cv,
            cp >> _CFG_BIT & 1,
            bool(cp >> _CFG_LAST & 1),
        )
        m_cfg_ready = model.config_ready
        if bump_status and m_status["generation"] == 1:
            m_status = dict(m_status, generation=2)
            bump_status = False
        expected, m_beat, faulty = codec.expected(m_beat, faulty)
        m_status_value = encode_status(m_status)
        if (
            m_ready != ready
            or expected != beat
            or bool(m_cfg_ready) != bool(c_ready)
            or m_status_value != status
        ):
            bad += 1
            if first is None:
                first = describe_cycle(
                    c, trace, codec, ready, beat, m_ready, m_beat, valid, payload, out_ready
                )
                first["rtl"].update(config_ready=bool(c_ready), status=decode_status(status))
                first["model"].update(config_ready=bool(m_cfg_ready), status=m_status)
                first["inputs"].update(
                    config_valid=bool(cv),
                    config_bit=cp >> _CFG_BIT & 1,
                    config_last=bool(cp >> _CFG_LAST & 1),
                )
    return {"cycles": len(trace), "mismatching_cycles": bad, "first": first}


def score_programmable(
    width: int,
    names: Sequence[str],
    expected: Sequence[Expectation],
    beats,
    answer_maps: Sequence[Optional[Sequence[tuple]]],
) -> tuple[list[dict], list[dict]]:
    """Score documents whose readout bits mean different queries: ``answer_maps[i]`` holds
    (where, query number) pairs for document ``i`` (the configuration active when it streamed;
    where: a readout bit or a combination's expression, decoded by
    :func:`xpfilt.model.custom.answers_in` as every host does), or is None when no
    configuration was loaded (then every readout bit must be 0, and the bits set are reported
    as numbers). Columns that are no query's answer also raise their match flag; the decoding
    reads only the answers' bits. The framing, sequence numbers and error flags are checked by
    :func:`xpfilt.sim.checker.score_documents`. Returns (results, mismatches) with query
    numbers."""

    def decode(i: int, bits: int) -> tuple[int, ...]:
        pairs = answer_maps[i] if i < len(answer_maps) else None
        if pairs is None:
            return tuple(j for j in range(width) if bits >> j & 1)
        return answers_in(pairs, bits)

    order = SimpleNamespace(query_numbers=list(range(width)))
    results, mismatches = score_documents(order, names, expected, beats, decode=decode)
    for result in results:
        result["configured"] = answer_maps[result["document"]] is not None
    for m in mismatches:
        if m["kind"] == "document" and answer_maps[m["document"]] is None:
            m["detail"] += " (readout bit positions; no configuration loaded: all must be 0)"
    return results, mismatches
