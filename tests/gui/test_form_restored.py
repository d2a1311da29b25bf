"""The Run form comes back as it was left: the model, engine, precision, mode and scenario saved when the window
closed are chosen again when the next window builds its form (console.ui.run_setup)."""

from console.ui.app import build_main_window
from widgets.run_form import CHOICE_FIELDS


def test_saved_choices_are_chosen_again(qtbot, tmp_path):
    first = build_main_window(tmp_path / "history.db", telemetry_hz=None, discover_targets=False)
    qtbot.addWidget(first)
    form = first.run_page.form
    defaults = {field: form.values()[field] for field in CHOICE_FIELDS}
    # away from the defaults: the last model offered, then its last engine and last scenario
    for field in ("model", "engine", "scenario"):
        combo = form._combo(field)
        enabled = [i for i in range(combo.count()) if form._is_enabled(combo, i)]
        combo.setCurrentIndex(enabled[-1])
    chosen = {field: form.values()[field] for field in CHOICE_FIELDS}
    assert chosen != defaults
    first.settings.save_form_values(form.values())
    first.close()

    second = build_main_window(tmp_path / "history.db", telemetry_hz=None, discover_targets=False)
    qtbot.addWidget(second)
    assert {field: second.run_page.form.values()[field] for field in CHOICE_FIELDS} == chosen
