"""console.files.output_file: what is at `--out` is written into, replaced whole, or refused — never destroyed.

Device nodes are made in tmp_path (we run as root): makedev(1, 7) behaves as /dev/full (every write fails with
ENOSPC), makedev(1, 3) as /dev/null. The system's own nodes are never a target here.
"""

import errno
import io
import os
import socket
import stat
import threading

import pytest
from special_files import fifo_at

from console.files.output_file import (
    DEVICE,
    FIFO,
    FILE,
    STDOUT,
    OutputError,
    check_out,
    write_bytes_to,
    write_out,
)

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="making device nodes needs root")


def full_node(path):
    os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 7))
    return path


def null_node(path):
    os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 3))
    return path


def write_text(target, text="a,b\n1,2\n"):
    return write_out(target, lambda stream: stream.write(text), binary=False)


def test_a_new_file_appears_whole_with_the_users_permissions(tmp_path):
    out = tmp_path / "runs.csv"
    target = check_out(str(out))
    assert target.kind == FILE and not out.exists()  # the check creates nothing
    write_text(target)
    assert out.read_text() == "a,b\n1,2\n" and os.listdir(tmp_path) == ["runs.csv"]
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~mask


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    out = tmp_path / "kept.csv"
    out.write_text("yesterday\n")

    def produce(stream):
        stream.write("half")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OutputError, match="No space left on device.*left as it was") as info:
        write_out(check_out(out), produce, binary=False)
    assert not info.value.usage
    assert out.read_text() == "yesterday\n" and os.listdir(tmp_path) == ["kept.csv"]


def test_a_symlink_to_a_file_is_replaced_not_followed(tmp_path):
    real = tmp_path / "real.csv"
    real.write_text("untouched\n")
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    write_text(check_out(link))
    assert not link.is_symlink() and link.read_text() == "a,b\n1,2\n" and real.read_text() == "untouched\n"


@needs_root
def test_a_full_character_device_is_a_failure_and_stays_a_device(tmp_path):
    node = full_node(tmp_path / "full")
    target = check_out(node)
    assert target.kind == DEVICE
    with pytest.raises(OutputError, match="writing into the character device failed.*No space left") as info:
        write_text(target)
    assert not info.value.usage
    assert stat.S_ISCHR(os.lstat(node).st_mode) and os.listdir(tmp_path) == ["full"]


@needs_root
def test_a_character_device_is_written_into_through_a_symlink(tmp_path):
    node = null_node(tmp_path / "null")
    link = tmp_path / "out.json"
    link.symlink_to(node)
    write_text(check_out(link))
    assert link.is_symlink() and stat.S_ISCHR(os.stat(link).st_mode) and sorted(os.listdir(tmp_path)) == [
        "null", "out.json"]


@needs_root
def test_a_block_device_is_refused_before_anything(tmp_path):
    node = tmp_path / "disk"
    os.mknod(node, stat.S_IFBLK | 0o600, os.makedev(7, 250))
    with pytest.raises(OutputError, match="is a block device") as info:
        check_out(node)
    assert info.value.usage and stat.S_ISBLK(os.lstat(node).st_mode)


@pytest.mark.parametrize("via_link", [False, True])
def test_a_fifo_without_a_reader_is_refused_at_once(tmp_path, via_link):
    fifo, path = fifo_at(tmp_path, via_link)
    with pytest.raises(OutputError, match="is a FIFO with no reader") as info:
        check_out(path)
    assert info.value.usage and stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.parametrize("via_link", [False, True])
def test_a_fifo_with_a_reader_receives_everything(tmp_path, via_link):
    fifo, path = fifo_at(tmp_path, via_link)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # the reader is there before the writer looks
    try:
        target = check_out(path)
        assert target.kind == FIFO
        received = bytearray()

        def read_all():
            os.set_blocking(reader, True)
            while chunk := os.read(reader, 65536):
                received.extend(chunk)

        thread = threading.Thread(target=read_all)
        thread.start()
        text = "x" * 300_000 + "\n"  # more than a pipe holds: the writer must wait for the reader, not fail
        write_text(target, text)
        thread.join(timeout=60)
        assert not thread.is_alive() and received.decode() == text
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_fifo_whose_reader_leaves_is_a_failure(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    target = check_out(fifo)
    os.close(reader)
    with pytest.raises(OutputError, match="reader stopped reading before the end") as info:
        write_text(target)
    assert not info.value.usage and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_socket_is_refused(tmp_path):
    path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        with pytest.raises(OutputError, match="is a socket") as info:
            check_out(path)
    assert info.value.usage and stat.S_ISSOCK(os.lstat(path).st_mode)


def test_standard_output_by_name_and_by_what_it_is(tmp_path, monkeypatch):
    """`-` and /dev/stdout name the stream; so does any path that reaches this process's standard output."""
    assert check_out("-").kind == STDOUT and check_out("/dev/stdout").kind == STDOUT
    read_end, write_end = os.pipe()
    try:
        with open(write_end, "w", closefd=False) as stdout:
            link = tmp_path / "to-stdout"
            link.symlink_to(f"/proc/self/fd/{write_end}")
            assert check_out(link, stdout=stdout).kind == STDOUT
            assert check_out(f"/proc/self/fd/{write_end}", stdout=stdout).kind == STDOUT
        assert link.is_symlink()
    finally:
        os.close(read_end)
        os.close(write_end)
    buffer = io.BytesIO()
    monkeypatch.setattr("sys.stdout", io.TextIOWrapper(buffer, encoding="utf-8"))
    write_out(check_out("-"), lambda stream: stream.write(b"%PDF-1.4\n"), binary=True)
    assert buffer.getvalue() == b"%PDF-1.4\n"


def test_the_file_standard_output_is_redirected_to_keeps_its_rename(tmp_path):
    """`--out F > F`: F is named directly, not through a link, so it stays a whole-or-nothing file."""
    out = tmp_path / "f.json"
    with open(out, "w") as stdout:
        assert check_out(out, stdout=stdout).kind == FILE
        link = tmp_path / "fd"
        link.symlink_to(f"/proc/self/fd/{stdout.fileno()}")
        assert check_out(link, stdout=stdout).kind == STDOUT


@pytest.mark.parametrize("name, problem", [
    ("x" * 300, "is 300 bytes long, more than the 255"),
    ("é" * 200, "is 400 bytes long"),
])
def test_a_name_too_long_is_a_usage_error_before_anything(tmp_path, name, problem):
    with pytest.raises(OutputError, match=problem) as info:
        check_out(tmp_path / name)
    assert info.value.usage and os.listdir(tmp_path) == []


def test_a_long_but_legal_name_gets_a_temporary_file_that_fits(tmp_path):
    out = tmp_path / ("y" * 250 + ".csv")
    write_text(check_out(out))
    assert out.read_text() == "a,b\n1,2\n" and os.listdir(tmp_path) == [out.name]


@pytest.mark.parametrize("make, problem", [
    (lambda tmp: tmp / "missing" / "r.csv", "the folder .*missing does not exist; create it"),
    (lambda tmp: (tmp / "file").write_text("") or tmp / "file" / "r.csv", "is not a directory|not a directory"),
    (lambda tmp: tmp, "is a directory; give a file path such as .*out.json"),
    (lambda tmp: (tmp / "loop").symlink_to(tmp / "loop") or tmp / "loop", "symbolic links"),
    (lambda tmp: "", "is empty"),
])
def test_paths_that_cannot_be_written_are_usage_errors(tmp_path, make, problem):
    path = make(tmp_path)
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(OutputError, match=problem) as info:
        check_out(path)
    assert info.value.usage and sorted(os.listdir(tmp_path)) == before


def test_a_read_only_folder_is_a_usage_error(tmp_path, monkeypatch):
    """As root every folder takes files, so the refusal of access(2) (EACCES, EROFS) is simulated."""
    monkeypatch.setattr(os, "access", lambda *a, **k: False)
    with pytest.raises(OutputError, match="does not take new files") as info:
        check_out(tmp_path / "r.html")
    assert info.value.usage


def test_bytes_already_made_go_through_the_same_rules(tmp_path):
    out = tmp_path / "r.html"
    write_bytes_to(out, b"<html></html>")
    assert out.read_bytes() == b"<html></html>"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OutputError, match="FIFO with no reader"):
        write_bytes_to(fifo, b"x")


def test_a_name_that_is_not_utf8_is_shown_not_a_crash(tmp_path):
    """A file name from another locale reaches Python as lone surrogates; messages must still print strictly."""
    name = os.fsdecode(b"caf\xe9\xff.html")
    with pytest.raises(OutputError) as info:
        check_out(tmp_path / "missing" / name)
    message = str(info.value)
    assert "caf\\xe9\\xff.html" in message and message.encode("utf-8", "strict")
    target = check_out(tmp_path / name)
    assert target.text.encode("utf-8", "strict") and target.text.endswith("caf\\xe9\\xff.html")
    write_text(target)
    assert os.listdir(tmp_path.as_posix().encode()) == [b"caf\xe9\xff.html"]


def test_the_history_and_its_companions_are_never_an_output_but_a_link_to_it_may_be_replaced(tmp_path):
    history = tmp_path / "history.db"
    history.write_bytes(b"SQLite format 3\0")
    (tmp_path / "history.db-wal").write_bytes(b"wal")
    for name in ("history.db", "history.db-wal"):
        with pytest.raises(OutputError, match="is the history database") as refused:
            check_out(str(tmp_path / name), keep=history)
        assert refused.value.usage
    os.link(history, tmp_path / "hard.db")  # the same file under another name is still the history
    with pytest.raises(OutputError, match="is the history database"):
        check_out(str(tmp_path / "hard.db"), keep=history)
    os.symlink(history, tmp_path / "link.db")  # the rename replaces a link, never what it points to
    assert check_out(str(tmp_path / "link.db"), keep=history).kind == FILE
    assert check_out(str(tmp_path / "other.json"), keep=history).kind == FILE
    assert history.read_bytes() == b"SQLite format 3\0"
