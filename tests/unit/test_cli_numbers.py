"""No traceback ever: every out-of-range or non-finite number on every command is the usual option error (exit 2,
one line naming the option, the value and the allowed range), and options that do not apply are refused."""

import os
import subprocess
import sys

import pytest

from console.cli import main


def refused(capsys, *argv):
    """(exit code, the error line) of a command line that must be refused before anything runs."""
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's own error
        code = exc.code
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "error:" in line]
    assert "Traceback" not in err
    assert len(lines) == 1, err
    return code, lines[0]


@pytest.mark.parametrize(("argv", "words"), [
    (["history", "--limit", "1e20"], "argument --limit: must be a whole number from 1 to 1,000,000,000, got '1e20'"),
    (["history", "--limit", "-5"], "argument --limit: must be a whole number from 1 to 1,000,000,000, got '-5'"),
    (["history", "--limit", "99999999999999999999"], "got '99999999999999999999'"),
    (["telemetry", "--seconds", "inf"], "argument --seconds: must be a number > 0 and ≤ 86,400 s, got 'inf'"),
    (["telemetry", "--seconds", "nan"], "argument --seconds: must be a number > 0 and ≤ 86,400 s, got 'nan'"),
    (["telemetry", "--rate", "1e9"], "argument --rate: must be a number ≥ 0.5 and ≤ 50 Hz, got '1e9'"),
    (["run", "--duration", "nan"], "argument --duration: must be a number > 0 and ≤ 86,400 s, got 'nan'"),
    (["run", "--duration", "inf"], "argument --duration: must be a number > 0 and ≤ 86,400 s, got 'inf'"),
    (["run", "--batch", "1e30"], "argument --batch: must be a whole number from 1 to 65536, got '1e30'"),
    (["run", "--batch", str(10**30)], f"argument --batch: must be a whole number from 1 to 65536, got '{10**30}'"),
    (["run", "--threads", "-1"], "argument --threads: must be a whole number from 1 to 4096, got '-1'"),
    (["run", "--iterations", "0"], "argument --iterations: must be a whole number from 1 to 1000000000, got '0'"),
    (["run", "--warmup=-inf"], "argument --warmup: must be a number ≥ 0 and ≤ 3,600 s, got '-inf'"),
    (["run", "--load-timeout", "1e400"], "argument --load-timeout: must be a number > 0 and ≤ 86,400 s, got '1e400'"),
    (["run", "--qps", "inf"], "argument --qps: must be a number > 0"),
    (["run", "--schedule-timeout", "nan"], "argument --schedule-timeout: must be a number > 0 and ≤ 86,400 s"),
    (["analyze", "--profile-iterations", "1e9"], "argument --profile-iterations: must be a whole number"),
    (["sweep", "--batch", "1,2", "--duration", "nan"], "argument --duration: must be a number > 0"),
    (["compare", "a", "b", "--alpha", "nan"], "argument --alpha: must be a number > 0 and < 1, got 'nan'"),
    (["compare", "a", "b", "--noise", "inf"], "argument --noise: must be a number ≥ 0 and < 1, got 'inf'"),
    (["regressions", "--alpha", "1"], "argument --alpha: must be a number > 0 and < 1, got '1'"),
    (["machine", "--repeats", "1e9"], "argument --repeats: must be a whole number from 1 to 1,000, got '1e9'"),
    (["make-data", "--dir", "x", "--count", "0"], "argument --count: must be a whole number from 1 to 10,000,000"),
    (["make-data", "--dir", "x", "--seed", "-1"], "argument --seed: must be a whole number from 0 to 4,294,967,295"),
    (["node", "start", "--port", "70000"], "argument --port: must be a whole number from 1 to 65,535, got '70000'"),
    (["whatif", "r", "--peak-gflops", "inf"], "argument --peak-gflops: must be a number > 0 and ≤ 1,000,000,000 GFLOP/s"),
    (["whatif", "r", "--threads", "0"], "argument --threads: must be a whole number from 1 to 4,096, got '0'"),
])
def test_bad_numbers_are_option_errors(capsys, argv, words):
    code, line = refused(capsys, *argv)
    assert code == 2 and words in line


@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "features.onnx"
    path.write_bytes(b"validation does not parse it")
    return str(path)


@pytest.mark.parametrize(("extra", "words"), [
    (["--input-value", "x=1e400"], "--input-value x: '1e400' is not a finite number: give one between -1.798e+308"),
    (["--input-value", "x=nan"], "--input-value x: 'nan' is not a finite number"),
    (["--input", "x=1x99999999999999999999"], "--input x: bad shape '1x99999999999999999999': "
                                              "'99999999999999999999' is not a whole number ≥ 1 (and ≤ "
                                              "9,223,372,036,854,775,807)"),
    (["--param", "layers=2"], "--param: size parameters apply to catalog models only"),
])
def test_bad_values_for_a_model_file_are_option_errors(capsys, tmp_path, model_file, extra, words):
    code, line = refused(capsys, "run", "--model", model_file, "--engine", "onnxruntime", *extra,
                         "--db", str(tmp_path / "h.db"))
    assert code == 2 and words in line


@pytest.mark.parametrize(("extra", "words"), [
    (["--input", "x=1x16"], "--input x: input shapes and values apply to model files only; catalog model mlp"),
    (["--input-value", "rate=16000"], "--input-value rate: input shapes and values apply to model files only"),
    (["--param", "layers=1e400"], "--param layers: '1e400' is not a whole number"),
    (["--param", "layers=99999999999999999999"], "--param layers: must be a whole number from 1 to 1000000"),
])
def test_options_that_do_not_apply_to_a_catalog_model_are_refused(capsys, tmp_path, extra, words):
    code, line = refused(capsys, "run", "--model", "mlp", *extra, "--db", str(tmp_path / "h.db"))
    assert code == 2 and words in line


def test_a_directory_as_the_model_is_named_as_one(capsys, tmp_path):
    code, line = refused(capsys, "run", "--model", str(tmp_path) + "/", "--db", str(tmp_path / "h.db"))
    assert code == 2 and f"--model: {tmp_path}/ is a directory, not a model file" in line


@pytest.mark.parametrize(("axis", "words"), [
    (["--batch", "1,1e30"], "--batch: '1e30' is not a whole number (in '1,1e30'); give whole numbers from 1 to 65536"),
    (["--qps", "10,inf"], "--qps: inf is not a request rate > 0"),
    (["--qps", "10,nan"], "--qps: nan is not a request rate > 0"),
])
def test_sweep_lists_refuse_non_finite_and_out_of_range_values(capsys, tmp_path, axis, words):
    code, line = refused(capsys, "sweep", *axis, "--db", str(tmp_path / "h.db"))
    assert code == 2 and words in line


def labconsole(*args, timeout=120):
    env = {key: value for key, value in os.environ.items() if key != "LABCONSOLE_DB"}
    return subprocess.run([sys.executable, "-m", "console", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.mark.parametrize(("argv", "words"), [
    (["history", "--limit", "1e20"], "labconsole history: error: argument --limit: must be a whole number"),
    (["telemetry", "--seconds", "inf"], "labconsole telemetry: error: argument --seconds: must be a number > 0"),
    (["run", "--model", "mlp", "--input-value", "x=1e400"], "labconsole: error: --input-value x: '1e400' is not a "
                                                            "finite number"),
])
def test_the_installed_command_answers_without_a_traceback(tmp_path, argv, words):
    done = labconsole(*argv, "--db", str(tmp_path / "h.db")) if argv[0] != "telemetry" else labconsole(*argv)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and words in done.stderr
