"""A TorchScript file records no shapes: its Tensor inputs need a whole shape, its int/float/bool inputs a number."""

from widgets.input_editor import InputEditor

# As engines.model_files.torchscript.torchscript_signature lists them (shape None: the file does not say).
TORCHSCRIPT_INPUTS = [
    {"name": "pixel_values", "dtype": "Tensor", "shape": None},
    {"name": "scale", "dtype": "float", "shape": None},
    {"name": "steps", "dtype": "int", "shape": None},
    {"name": "flip", "dtype": "bool", "shape": None},
]


def _editor(qtbot, inputs):
    editor = InputEditor()
    qtbot.addWidget(editor)
    editor.set_inputs(inputs)
    return editor


def test_a_tensor_input_asks_for_a_shape_and_numbers_ask_for_numbers(qtbot):
    editor = _editor(qtbot, TORCHSCRIPT_INPUTS)
    assert editor.errors() == ["input 'pixel_values' needs a shape such as 1x3x224x224 (the file records none)",
                               "input 'scale' needs a number", "input 'steps' needs a number",
                               "input 'flip' needs 0 or 1"]
    assert editor._table.item(0, 2).text() == "not recorded"
    assert "shape" in editor._table.item(0, 3).toolTip()
    editor._table.item(0, 3).setText("1x3x224x224")
    editor._table.item(1, 3).setText("0.5")
    editor._table.item(2, 3).setText("4")
    editor._table.item(3, 3).setText("1")
    assert editor.errors() == []
    assert editor.values() == ({"pixel_values": [1, 3, 224, 224]}, {"scale": 0.5, "steps": 4, "flip": 1})


def test_a_tensor_input_does_not_take_a_number_nor_a_number_input_a_shape(qtbot):
    editor = _editor(qtbot, TORCHSCRIPT_INPUTS[:2])
    editor._table.item(0, 3).setText("16000")  # a number is a rank-1 shape at most, never a scalar value
    editor._table.item(1, 3).setText("1x3")
    shapes, scalars = editor.values()
    assert scalars == {} and "pixel_values" not in scalars
    assert editor.errors() == ["input 'scale' needs a number"]
    assert shapes == {"pixel_values": [16000]}


def test_a_bool_input_takes_0_or_1_only(qtbot):
    editor = _editor(qtbot, TORCHSCRIPT_INPUTS[3:])
    editor._table.item(0, 3).setText("2")
    assert editor.values() == ({}, {}) and editor.errors() == ["input 'flip' needs 0 or 1"]


def test_an_onnx_tensor_of_unknown_rank_asks_for_a_shape_and_an_unfed_type_asks_nothing(qtbot):
    editor = _editor(qtbot, [{"name": "x", "dtype": "float32", "shape": None},
                             {"name": "history", "dtype": "List[Tensor]", "shape": None}])
    assert editor.errors() == ["input 'x' needs a shape such as 1x3x224x224 (the file records none)"]
    editor._table.item(0, 3).setText("2x8")
    assert editor.values() == ({"x": [2, 8]}, {}) and editor.errors() == []
