"""engines.ddp.breakdown.summarize: where a data-parallel step's time goes, and whether a straggler is named."""

from __future__ import annotations

import pytest
from ddp_samples import MS, steps

from engines.ddp.breakdown import summarize


def _bd(per_rank, hosts=None, scaling="strong", batch=8):
    return summarize(per_rank, hosts=hosts or [f"host{r}" for r in range(len(per_rank))], scaling=scaling,
                     global_batch=batch)


def test_a_rank_slowed_by_30_ms_is_named_with_its_delay():
    bd = _bd(steps(2, slow={1: 30.0}))
    who = bd["straggler"]
    assert who["rank"] == 1 and who["host"] == "host1" and who["named"]
    assert who["delay_s"] == pytest.approx(30 * MS, abs=1 * MS)  # the whole gap over the other rank, not half of it
    assert who["interval_95"][0] <= who["delay_s"] <= who["interval_95"][1]
    assert who["slowest_share"] == 1.0
    assert bd["parts"]["straggler_s"] == pytest.approx(30 * MS, abs=1 * MS)
    # exposed communication is the straggler's own (2 ms), not rank 0's wait for it (32 ms): no double count
    assert bd["parts"]["exposed_comm_s"] == pytest.approx(2 * MS)


def test_noise_alone_never_names_a_straggler():
    bd = _bd(steps(4, noise_ms=0.5, seed=7))
    assert not bd["straggler"]["named"]
    assert bd["straggler"]["slowest_share"] < 0.8
    # a rank slowest in every step but by far less than the step-to-step noise is not named either
    close = _bd(steps(2, slow={1: 0.2}, noise_ms=0.0, shared_noise_ms=1.0, seed=3))
    assert close["straggler"]["rank"] == 1 and close["straggler"]["slowest_share"] == 1.0
    assert not close["straggler"]["named"] and "noise" in close["straggler"]["why"]


def test_parts_add_to_the_step_when_the_stamps_partition_it():
    bd = _bd(steps(2, slow={1: 5.0}, data_ms=4.0, copy_ms=1.5))
    assert bd["parts"]["grad_copy_s"] == pytest.approx(1.5 * MS)  # the slowest rank's own copy-back
    assert bd["sum_s"] == pytest.approx(bd["step_s"]["mean"], abs=1e-9)
    assert abs(bd["unattributed_s"]) < 1e-9 and bd["adds_up"] and bd["closure"] == pytest.approx(1.0)
    assert bd["parts"]["data_wait_s"] == pytest.approx(4 * MS)
    assert bd["step_s"]["interval_95"][0] <= bd["step_s"]["mean"] <= bd["step_s"]["interval_95"][1]
    assert bd["samples_per_s"] == pytest.approx(8 / bd["step_s"]["mean"])
    assert [row["rank"] for row in bd["per_rank"]] == [0, 1]


def test_time_the_stamps_miss_is_unattributed_not_folded_in():
    per_rank = steps(2)
    for rank in per_rank:
        rank["step_s"] = [s + 10 * MS for s in rank["step_s"]]  # 10 ms no stamp covers
    bd = _bd(per_rank)
    assert bd["unattributed_s"] == pytest.approx(10 * MS)
    assert bd["sum_s"] == pytest.approx(bd["step_s"]["mean"] - 10 * MS)
    assert not bd["adds_up"] and bd["closure"] < 0.95


def test_overlap_is_100_when_nothing_is_exposed_and_0_when_all_is():
    hidden = _bd(steps(2, exposed_ms=0.0, noise_ms=0.0))
    assert hidden["comm"]["overlap_pct"] == pytest.approx(100.0) and hidden["comm"]["exposed_s"] == 0.0
    exposed = _bd(steps(2, exposed_ms=8.0, busy_ms=8.0, noise_ms=0.0))
    assert exposed["comm"]["overlap_pct"] == pytest.approx(0.0)
    assert exposed["comm"]["allreduce_s"] == pytest.approx(8 * MS)


def test_the_measured_all_reduce_leaves_out_waiting_for_the_straggler():
    bd = _bd(steps(2, slow={1: 30.0}, busy_ms=8.0, noise_ms=0.0))
    assert bd["comm"]["allreduce_s"] == pytest.approx(8 * MS)  # rank 1 arrives last: its all-reduce is the transfer
    assert bd["comm"]["allreduce_median_rank_s"] == pytest.approx((8 + 32) / 2 * MS)  # rank 0 waited 32 ms in it


def test_one_rank_has_no_straggler_and_no_overlap_figure():
    bd = _bd(steps(1))
    assert bd["straggler"]["rank"] is None and not bd["straggler"]["named"]
    assert bd["parts"]["straggler_s"] == 0.0 and bd["comm"]["overlap_pct"] is None
    assert bd["comm"]["allreduce_s"] is None and bd["adds_up"]


def test_ranks_are_aligned_by_their_last_steps_and_the_result_is_deterministic():
    per_rank = steps(2, slow={1: 30.0}, n=40)
    longer = {k: [0.5] * 5 + v for k, v in per_rank[0].items()}  # 5 older steps only rank 0 kept
    bd = _bd([longer, per_rank[1]])
    assert bd["steps"] == 40 and bd == _bd([longer, per_rank[1]])
    assert bd["step_s"]["mean"] == pytest.approx(_bd(per_rank)["step_s"]["mean"])


@pytest.mark.parametrize("mutate, words", [
    (lambda r: r[1].pop("exposed_comm_s"), "rank 1: step keys exposed_comm_s missing"),
    (lambda r: r[0]["forward_s"].pop(), "different lengths"),
    (lambda r: r[0]["optimizer_s"].__setitem__(3, -1.0), "finite seconds"),
    (lambda r: r[0]["optimizer_s"].__setitem__(3, float("nan")), "finite seconds"),
])
def test_unreadable_stamps_are_refused_by_rank_and_key(mutate, words):
    per_rank = steps(2, n=10)
    mutate(per_rank)
    with pytest.raises(ValueError, match=words):
        _bd(per_rank)


def test_bad_arguments_say_what_to_give():
    with pytest.raises(ValueError, match="one host per rank"):
        summarize(steps(2, n=5), hosts=["a"], scaling="strong", global_batch=8)
    with pytest.raises(ValueError, match="'strong' or 'weak'"):
        summarize(steps(2, n=5), hosts=None, scaling="linear", global_batch=8)
    with pytest.raises(ValueError, match="no ranks"):
        summarize([], hosts=None, scaling="strong", global_batch=8)
    with pytest.raises(ValueError, match="no measured steps"):
        summarize(steps(2, n=0), hosts=None, scaling="strong", global_batch=8)
