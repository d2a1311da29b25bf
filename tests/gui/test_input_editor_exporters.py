"""The input editor with inputs as exporters write them: "?" dims each need a size of their own, and a named dim
given two sizes shows the run's warning under the table without blocking the run."""

from widgets.input_editor import InputEditor


def test_paddle_style_question_marks_take_different_sizes(qtbot):
    editor = InputEditor()
    qtbot.addWidget(editor)
    editor.set_inputs([{"name": "x", "dtype": "float32", "shape": [None, 3, None, None]}])
    assert editor._table.item(0, 2).text() == "? × 3 × ? × ?"
    editor._table.item(0, 3).setText("1x3x48x192")
    assert editor.errors() == [] and editor.warnings() == []
    assert editor._warning.isHidden()


def test_a_named_dim_given_two_sizes_is_shown_as_a_warning_not_an_error(qtbot):
    editor = InputEditor()
    qtbot.addWidget(editor)
    editor.set_inputs([{"name": "input_ids", "dtype": "int64", "shape": ["batch", "seq"]},
                       {"name": "attention_mask", "dtype": "int64", "shape": ["batch", "seq"]}])
    editor._table.item(0, 3).setText("1x16")
    editor._table.item(1, 3).setText("1x8")
    assert editor.errors() == []  # the run may start
    (warning,) = editor.warnings()
    assert "dim 'seq' is 8 here but 16 in --input input_ids" in warning
    assert not editor._warning.isHidden() and warning in editor._warning.text()
    editor._table.item(1, 3).setText("1x16")
    assert editor.warnings() == [] and editor._warning.isHidden()
