"""The serial readout: RTL (Amaranth simulator) against its register model, cycle by cycle, at
widths of one chunk, several chunks and a partial last chunk (the chunk-wise shift of the
shadow register; 577 and 1,100 bits: more than one group of the chunk fetch's multiplexer
tree), with random ready and captures as soon as the readout is free."""

import random

import pytest

from xpfilt.hdl.readout import Readout
from xpfilt.hwspec.readout import collect_readout
from xpfilt.model.readout import SerialReadoutModel

from .rtl_compare import compare_readout_with_model
from .test_sparse_readout import random_flags


def run_serial(width, documents, *, seed, p_ready, p_capture=0.7):
    return compare_readout_with_model(
        Readout(width),
        SerialReadoutModel(width),
        documents,
        seed=seed,
        p_ready=p_ready,
        p_capture=p_capture,
    )


@pytest.mark.parametrize(
    "width,p_ready,p_capture",
    [
        (1, 0.7, 0.7),
        (63, 0.7, 0.7),
        (64, 1.0, 1.0),
        (65, 1.0, 1.0),
        (130, 0.6, 0.7),
        (200, 1.0, 1.0),
        (257, 0.9, 1.0),
        (577, 1.0, 1.0),
        (1100, 0.8, 1.0),
    ],
)
def test_rtl_equals_model_and_every_flag_is_read_out(width, p_ready, p_capture):
    rng = random.Random(width)
    documents = [random_flags(rng, width) for _ in range(6)]
    result = run_serial(width, documents, seed=width, p_ready=p_ready, p_capture=p_capture)
    assert result["mismatch"] is None, result["mismatch"]
    readouts = collect_readout(result["beats"], width)
    assert [r.bits for r in readouts] == documents
    assert [r.doc for r in readouts] == list(range(len(documents)))
