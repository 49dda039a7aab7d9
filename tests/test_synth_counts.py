"""Cell counts of a synthesized design against the device (xpfilt.eda.synth.count_cells)."""

from xpfilt.eda.synth import count_cells


def test_an_ecp5_lutram_takes_the_lut_positions_of_three_slices():
    # a TRELLIS_DPR16X4 is two RAM-mode slices (4 LUT4 positions) plus the write-port slice
    # (TRELLIS_RAMW), whose two LUT positions cannot hold logic: nextpnr counts all six
    # ("RAM LUTs" + "RAMW LUTs"), and so must the fit check
    counts = count_cells("ecp5", {"LUT4": 100, "TRELLIS_DPR16X4": 10, "TRELLIS_FF": 7})
    assert counts == {"luts": 160, "ffs": 7, "lutram": 10, "bram": 0}
