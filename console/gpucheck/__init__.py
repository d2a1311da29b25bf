"""`labconsole gpu-check` (`make gpu-check`): what a machine with NVIDIA GPUs must show, checked by running the
product's own command line, one subprocess per step, against one fresh temporary history.

Why subprocesses of the real CLI, not library calls: the check is an acceptance test of what users run (argument
parsing, worker spawning, JSON output, exit codes), and a CUDA crash in one step must not end the others.

One module per job: `probe` (the NVIDIA driver and GPUs as NVML sees them, without torch: what the other steps are
checked against), `steps` (each step: its command line and how its output is judged), `check` (runs the steps in
order within a time budget and builds the JSON document). The command is console/cli/gpu_check_cmd.py.
"""
