"""fan_out: every item comes back, serially and on Spark; failures and timeouts are outcomes."""

import time

import pytest

from xpfilt.scale.fanout import fan_out


@pytest.mark.parametrize("master", ["serial", pytest.param("local[2]", marks=pytest.mark.slow)])
def test_every_item_comes_back_once_with_its_value_or_reason(master):
    def work(x):  # defined here: pickled by value, so Spark workers need not import tests/
        if x == 3:
            raise ValueError("item 3 is bad")
        return x * x

    outcomes = list(fan_out(range(6), work, master=master, progress=False))
    assert sorted(o.index for o in outcomes) == list(range(6))
    by_index = {o.index: o for o in outcomes}
    assert [by_index[i].value for i in (0, 1, 2, 4, 5)] == [0, 1, 4, 16, 25]
    assert by_index[3].status == "failed" and by_index[3].value is None
    assert "ValueError: item 3 is bad" in by_index[3].reason


@pytest.mark.slow
def test_a_slow_item_times_out_on_spark_and_the_others_finish():
    def work(x):
        if x == "slow":
            time.sleep(120)
        return x

    start = time.perf_counter()
    outcomes = {
        o.item: o
        for o in fan_out(["a", "slow", "b"], work, master="local[2]", timeout=4, progress=False)
    }
    assert time.perf_counter() - start < 60
    assert outcomes["slow"].status == "timeout" and "cancelled after 4 s" in outcomes["slow"].reason
    assert outcomes["a"].value == "a" and outcomes["b"].value == "b"
