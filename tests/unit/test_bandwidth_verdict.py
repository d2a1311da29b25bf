"""The card's bandwidth matrix in the analysis: `whatif --onto` scales copies by the measured link of the target GPU
when the card has one (and says so), and the host-device-transfer verdict names the link and its measured ceiling."""

import json

import pytest
from analysis_samples import CARD, MIB, op, run

from console.analysis import whatif
from console.analysis.bottleneck import diagnose


def h2d(device, pinned_gbs, pageable_gbs=None, theoretical=31.5, label="PCIe Gen4 x16"):
    entries = [{"id": f"h2d:pci:x:{device}:pinned", "kind": "h2d", "variant": "pinned", "device": device,
                "link_label": label, "median_gbs": pinned_gbs, "theoretical_gbs": theoretical,
                "method": "Tensor.copy_ between CUDA events, median of 9", "not_available": None}]
    if pageable_gbs is not None:
        entries.append({**entries[0], "id": f"h2d:pci:x:{device}:pageable", "variant": "pageable",
                        "median_gbs": pageable_gbs})
    return entries


def gpu_card(host, h2d_pinned=None, entries=None, target="cuda:0"):
    card = {**CARD, "host": host, "target": target, "device_memory_bandwidth_gbs": 1000.0,
            "peak_flops": {"fp32": 20e12}}
    if h2d_pinned is not None:
        card["h2d_gbs"] = {"pinned": h2d_pinned}
    if entries is not None:
        card["links"] = {"schema": 1, "entries": entries, "not_available": {}}
    return card


def copy_run(card):
    return run([op("Memcpy", 100, 0.06, moved=100 * 64 * MIB), op("MatMul", 100, 0.04, flops=100 * 1e9, moved=100 * 1e7)],
               engine="onnxruntime", target="cuda:0", card=card)


def project(source, target):
    r = copy_run(source)
    out = whatif.project(r["ops"], r["profile"], r["summary"], r["machine"], target)
    json.dumps(out)
    return out


def test_the_projection_uses_the_measured_link_of_the_target_gpu_and_says_which():
    source = gpu_card("a", h2d_pinned=12.0, entries=h2d("cuda:0", 12.5))
    target = gpu_card("b", h2d_pinned=12.0, entries=h2d("cuda:0", 24.0) + h2d("cuda:1", 6.0))
    out = project(source, target)
    assert out["terms"]["transfer"]["scale"] == pytest.approx(12.5 / 24.0)  # the links, not the cards' 12 GB/s
    said = " ".join(out["notes"])
    assert "the measured link PCIe Gen4 x16 to cuda:0 (24 GB/s pinned, bandwidth matrix)" in said
    assert "the measured link PCIe Gen4 x16 to cuda:0 (12.5 GB/s pinned, bandwidth matrix)" in said
    assert sum("copies scaled" in note for note in out["notes"]) == 1  # said once, not per copy op


def test_one_method_on_both_sides_when_only_one_card_has_the_matrix():
    """A ratio of the matrix's figure over another card's h2d_gbs would carry two methods' difference."""
    out = project(gpu_card("a", h2d_pinned=12.0), gpu_card("b", h2d_pinned=6.0, entries=h2d("cuda:0", 24.0)))
    assert out["terms"]["transfer"]["scale"] == pytest.approx(2.0)  # 12 / 6: both cards' h2d_gbs
    said = " ".join(out["notes"])
    assert "the card's h2d_gbs.pinned (12 GB/s" in said and "the card's h2d_gbs.pinned (6 GB/s" in said
    assert "h2d_gbs on both cards: a card has no measured link for its GPU" in said


def test_without_a_measured_link_for_its_gpu_the_card_figure_is_used():
    target = gpu_card("b", h2d_pinned=6.0, entries=h2d("cuda:1", 24.0)
                      + [{**h2d("cuda:0", 24.0)[0], "median_gbs": None, "not_available": "failed"}])
    out = project(gpu_card("a", h2d_pinned=12.0), target)
    assert out["terms"]["transfer"]["scale"] == pytest.approx(2.0)
    assert "a card has no measured link for its GPU" in " ".join(out["notes"])
    assert whatif.transfer_figure({"target": "cpu", "links": {"entries": h2d("cuda:0", 24.0)}}) == (None, "")


def test_the_transfer_verdict_names_the_link_and_its_measured_ceiling():
    v = diagnose(copy_run(gpu_card("a", h2d_pinned=12.0, entries=h2d("cuda:0", 24.1, 11.2))))
    assert v["class"] == "host-device-transfer"
    ev = v["evidence"]
    assert ev["link"] == "PCIe Gen4 x16 to cuda:0" and ev["link_measured_gb_s"] == 24.1
    assert ev["link_theoretical_gb_s"] == 31.5 and ev["link_pageable_gb_s"] == 11.2
    assert ("PCIe Gen4 x16 to cuda:0: measured 24.1 GB/s pinned of 31.5 GB/s, 11.2 GB/s pageable"
            in v["sentence"])


def test_the_verdict_without_a_matrix_or_a_theoretical_rate_says_only_what_it_knows():
    plain = diagnose(copy_run(gpu_card("a", h2d_pinned=12.0)))
    assert plain["class"] == "host-device-transfer" and "link" not in plain["evidence"]
    assert "measured" not in plain["sentence"].split("lever")[0].split("copies take")[1]
    unknown = diagnose(copy_run(gpu_card("a", entries=h2d("cuda:0", 3.1, theoretical=None, label=None))))
    assert "the link to cuda:0: measured 3.1 GB/s pinned (its theoretical rate is not known)" in unknown["sentence"]
