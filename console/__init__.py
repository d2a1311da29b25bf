"""Lab Console: the console side (runner, history, telemetry, analysis, CLI; Qt only under console.ui)."""

__version__ = "0.1.0"
