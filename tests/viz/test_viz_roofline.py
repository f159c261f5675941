"""The roofline: roofs, points, one panel per profile, a picture that is not blank."""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET

from dfx.viz.document import read_document
from dfx.viz.roofline import peak_label, render_roofline, roofline_points
from dfx.viz.roofs import roofs_for

from ._docs import layered_doc


def _not_blank(png: bytes) -> bool:
    from PIL import Image

    img = Image.open(io.BytesIO(png)).convert("RGB")
    return len(img.getcolors(maxcolors=1 << 24)) > 10


def test_points_are_attained_flop_rate_at_intensity():
    hw = read_document(layered_doc(1)).hardware["toy"]
    points = {p.node: p for p in roofline_points(hw)[0]}
    # linear: 100 FLOPs in max(100, 10) ns = 1e9 FLOP/s at 100 / 10 = 10 FLOP/B
    assert points["linear_0"].intensity_flop_per_byte == 10
    assert abs(points["linear_0"].attained_flop_per_s - 1e9) < 1
    # relu: 1 FLOP in 10 ns = 1e8 FLOP/s; time share 10 / (100 + 10)
    assert abs(points["relu_0"].attained_flop_per_s - 1e8) < 1
    assert abs(points["relu_0"].time_share - 10 / 110) < 1e-12


def test_roofs_of_a_shipped_profile():
    from dfx.schema.analysis import example_analysis, example_hardware

    # a document written before peak_flop_per_s and bandwidth_bytes_per_s existed: the roofs come from the profile
    h100 = example_hardware(ridge_dtype="bfloat16", ridge_flop_per_byte={"HBM3": 989.4e12 / 3.35e12})
    del h100["peak_flop_per_s"], h100["bandwidth_bytes_per_s"]
    hw = read_document(example_analysis(hardware={"nvidia-h100-sxm": h100})).hardware["nvidia-h100-sxm"]
    roofs = roofs_for(hw)
    # H100 SXM datasheet: 3.35 TB/s HBM3, 989.4 TFLOP/s dense bf16
    assert abs(roofs.bandwidth_bytes_per_s["HBM3"] - 3.35e12) < 1e6
    assert abs(roofs.peak_flop_per_s - 989.4e12) < 1e9


def test_roofs_derived_from_the_document_for_an_unknown_profile():
    roofs = roofs_for(read_document(layered_doc(1)).hardware["toy"])
    # the linear ran its 100 FLOPs of compute in 100 ns: 1e9 FLOP/s; MEM = 1e9 / ridge 1
    assert roofs.source == "derived"
    assert abs(roofs.peak_flop_per_s - 1e9) < 1
    assert abs(roofs.bandwidth_bytes_per_s["MEM"] - 1e9) < 1


def test_one_panel_per_profile_side_by_side(mlp_doc, mlp_pictures):
    root = ET.fromstring(mlp_pictures.files["roofline.svg"])
    axes = [g for g in root.iter("{http://www.w3.org/2000/svg}g") if (g.get("id") or "").startswith("axes_")]
    assert len(axes) == len(mlp_doc["hardware"]) == 2
    assert _not_blank(mlp_pictures.files["roofline.png"])


def test_no_profile_no_roofline():
    doc = layered_doc(1)
    doc["hardware"] = {}
    assert render_roofline(read_document(doc)) is None


def test_the_peak_label_names_the_dtype_actually_used(mlp_pictures):
    # ibm-spyre.yaml lists peaks for int8, float8_e4m3fn and float16 (75 TFLOP/s) only, so the fp32 MLP
    # is timed at the fp16 peak; nvidia-h100-sxm.yaml lists float32 itself (66.9 TFLOP/s).
    svg = mlp_pictures.files["roofline.svg"]
    labels = re.findall(r"<!-- (peak [^>]*?) -->", svg)  # matplotlib writes each text as a comment
    assert labels == ["peak 66.9 TFLOP/s (float32)", "peak 75 TFLOP/s (float16, float32 not listed)"]


def test_the_peak_label_of_a_hand_built_fallback():
    doc = layered_doc(1)
    doc["hardware"]["toy"]["dtype_fallbacks"] = {"float32": "bfloat16"}  # the toy lists no fp32 peak
    assert peak_label(2e12, read_document(doc).hardware["toy"]) == "peak 2 TFLOP/s (bfloat16, float32 not listed)"
    doc["hardware"]["toy"]["dtype_fallbacks"] = {"float16": "bfloat16"}  # another dtype fell back, not the ridge's
    assert peak_label(2e12, read_document(doc).hardware["toy"]) == "peak 2 TFLOP/s (float32)"
