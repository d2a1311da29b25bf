"""The input editor asks exactly for what the model leaves open: non-batch dynamic dims and scalars."""

from widgets.input_editor import InputEditor

INPUTS = [
    {"name": "pixel_values", "dtype": "float32", "shape": ["batch", 3, 224, 224]},
    {"name": "input_ids", "dtype": "int64", "shape": ["batch", "sequence"]},
    {"name": "sample_rate", "dtype": "int64", "shape": []},
]


def test_only_open_inputs_need_values_and_errors_say_what_to_type(qtbot):
    editor = InputEditor()
    qtbot.addWidget(editor)
    editor.set_inputs(INPUTS)
    assert editor.isVisibleTo(None) or not editor.isHidden()
    assert editor.errors() == ["input 'input_ids' needs a shape for batch × sequence",
                               "input 'sample_rate' needs a number"]
    editor._table.item(1, 3).setText("1x128")
    editor._table.item(2, 3).setText("16000")
    assert editor.errors() == []
    assert editor.values() == ({"input_ids": [1, 128]}, {"sample_rate": 16000})


def test_bad_text_is_not_taken(qtbot):
    editor = InputEditor()
    qtbot.addWidget(editor)
    editor.set_inputs(INPUTS, values={"input_ids": [2, 64]})
    assert editor.values()[0] == {"input_ids": [2, 64]}
    editor._table.item(1, 3).setText("2 by 64")
    editor._table.item(2, 3).setText("fast")
    assert editor.values() == ({}, {})
    assert len(editor.errors()) == 2


def test_a_model_without_inputs_hides_the_editor(qtbot):
    editor = InputEditor()
    qtbot.addWidget(editor)
    editor.set_inputs(INPUTS)
    editor.clear()
    assert editor.isHidden() and editor.errors() == []
