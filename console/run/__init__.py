"""The run spine: one run's worker process, its session (telemetry, history, summary), the warm
spares, the console's core partition and its own CPU, and why a worker died."""
