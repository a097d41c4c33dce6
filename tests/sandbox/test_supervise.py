"""Clean-up and watches of the zygote, on trees and processes the test makes itself.

`remove_tree` (iterative, fd-relative, bounded), the start-up sweep of scratch roots
that dead zygotes left, the free-space watch's view of files unlinked but held open,
and the thread watch. Nothing here runs a model-written program.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from reward_service.sandbox import linux, supervise
from reward_service.sandbox.confine import (
    RUN_UID_BASE,
    RUN_UID_SLOTS,
    THREAD_MARGIN,
    THREADS,
    claim_run_uid,
    shared_uid_task_limit,
    thread_count,
)
from reward_service.sandbox.supervise import (
    SCRATCH_PREFIX,
    ScratchWatch,
    ThreadWatch,
    live_scratch_roots,
    make_scratch_root,
    remove_tree,
    sweep_scratch_roots,
)

DEPTH = 3000
"""Deeper than any recursion Python allows by default (shutil.rmtree fails at ~1,000)."""


def nest(top: Path, depth: int, files_per_level: int = 0) -> None:
    """`depth` nested directories `d` under `top` (made through directory fds: no path is long)."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for level in range(depth):
            os.mkdir("d", dir_fd=fd)
            for i in range(files_per_level):
                os.close(os.open(f"f{level}-{i}", os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=fd))
            child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
    finally:
        os.close(fd)


def in_child(body: Callable[[], Any]) -> Any:
    """`body()`'s JSON result, computed in a forked child (which may change its own limits,
    uid or mount namespace)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            try:
                result = {"ok": body()}
            except BaseException as e:  # reported to the parent, which fails the test
                result = {"error": f"{type(e).__name__}: {e}"}
            os.write(w, json.dumps(result).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as reader:
        data = reader.read()
    os.waitpid(pid, 0)
    result = json.loads(data)
    assert "error" not in result, result["error"]
    return result["ok"]


@pytest.fixture
def scratch_parent() -> Iterator[Path]:
    """A directory to hold scratch roots, as /tmp does, that no other test's zygote uses."""
    path = Path(tempfile.mkdtemp(prefix="sweep-test-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_a_tree_too_deep_for_recursion_is_removed(tmp_path: Path) -> None:
    """3,000 nested directories (shutil.rmtree raises RecursionError) go, files and all."""
    top = tmp_path / "run-1"
    top.mkdir()
    nest(top, DEPTH, files_per_level=1)
    assert remove_tree(str(top)) is True
    assert not top.exists()


def test_removal_holds_a_constant_number_of_descriptors(tmp_path: Path) -> None:
    """With only a handful of free descriptors the deep tree still goes (no fd per level)."""
    top = tmp_path / "run-1"
    top.mkdir()
    nest(top, DEPTH)

    def remove_with_few_fds() -> bool:
        open_now = len(os.listdir("/proc/self/fd"))
        resource.setrlimit(resource.RLIMIT_NOFILE, (open_now + 4, open_now + 4))
        return remove_tree(str(top))

    assert in_child(remove_with_few_fds) is True
    assert not top.exists()


def test_each_directory_is_listed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """O(entries): a wide directory of subdirectories is not listed again after each one."""
    top = tmp_path / "run-1"
    top.mkdir()
    for i in range(300):
        (top / f"s{i}").mkdir()
        (top / f"s{i}" / "f").write_text("x")
    listings: list[object] = []
    scandir = os.scandir

    def counting(path: Any) -> Any:
        listings.append(path)
        return scandir(path)

    monkeypatch.setattr(os, "scandir", counting)
    assert remove_tree(str(top)) is True
    assert len(listings) == 301


def test_no_symlink_is_followed(tmp_path: Path) -> None:
    """Links to a directory and a file outside are removed as links; their targets stay."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("x")
    top = tmp_path / "run-1"
    (top / "a" / "b").mkdir(parents=True)
    (top / "a" / "b" / "to-dir").symlink_to(outside)
    (top / "a" / "to-file").symlink_to(outside / "keep")
    (top / "dangling").symlink_to(tmp_path / "nowhere")
    assert remove_tree(str(top)) is True
    assert not top.exists() and (outside / "keep").read_text() == "x"


def test_a_link_given_as_the_tree_is_removed_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("x")
    (tmp_path / "link").symlink_to(outside)
    assert remove_tree(str(tmp_path / "link")) is True
    assert not (tmp_path / "link").exists() and (outside / "keep").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to hand the tree to another uid")
def test_directories_a_run_locked_are_opened_again_by_their_owner(tmp_path: Path) -> None:
    """As the tree's (non-root) owner: directories without read, write or search permission
    are given them back and removed."""
    base = Path(tempfile.mkdtemp(prefix="locked-tree-"))
    try:
        os.chown(base, 65534, 65534)
        top = base / "run-1"

        def make_and_remove() -> list[bool]:
            os.setresgid(65534, 65534, 65534)
            os.setresuid(65534, 65534, 65534)
            for mode in (0o000, 0o100, 0o300, 0o500):
                deep = top / f"m{mode:o}" / "inner"
                deep.mkdir(parents=True)
                (deep / "file").write_text("x")
                deep.chmod(mode)
                deep.parent.chmod(mode)
            top.chmod(0o500)
            return [remove_tree(str(top)), top.exists()]

        assert in_child(make_and_remove) == [True, False]
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_tree_past_the_bound_is_left_not_walked_to_its_end(tmp_path: Path) -> None:
    """Past `max_entries` listed entries the removal stops with False and leaves the rest: a
    chain of directories deeper than the bound stays whole; files listed before the bound
    are gone."""
    top = tmp_path / "run-1"
    top.mkdir()
    for i in range(50):
        (top / f"f{i}").write_text("x")
    nest(top, 100)
    assert remove_tree(str(top), max_entries=60) is False
    assert sorted(os.listdir(top)) == ["d"]
    assert remove_tree(str(top), max_entries=60) is False
    assert remove_tree(str(top)) is True and not top.exists()


def test_removing_what_is_not_there_succeeds(tmp_path: Path) -> None:
    assert remove_tree(str(tmp_path / "absent")) is True
    assert remove_tree(str(tmp_path / "absent" / "deeper")) is True


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_the_sweep_removes_dead_zygotes_roots_and_never_a_live_one(
    scratch_parent: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unlocked root gone stale goes; a locked (live) one, a fresh one, one named as no
    zygote names its root, and another directory stay."""
    # Stale after 10 minutes here, not 5 s: removing the deep dead root can take longer than
    # 5 s on a loaded machine, and the fresh root must still be fresh when the sweep reaches it.
    monkeypatch.setattr(supervise, "STALE_S", 600.0)
    live, live_lock = make_scratch_root(str(scratch_parent), 101)
    dead, dead_lock = make_scratch_root(str(scratch_parent), 102)
    os.close(dead_lock)
    nest(Path(dead), DEPTH)
    for root in (live, dead):
        _age(Path(root), 3600)
    fresh, fresh_lock = make_scratch_root(str(scratch_parent), 103)
    os.close(fresh_lock)
    unknown = scratch_parent / f"{SCRATCH_PREFIX}abcd1234"
    other = scratch_parent / "other-dir"
    for path in (unknown, other):
        path.mkdir()
        _age(path, 3600)
    try:
        assert sweep_scratch_roots(str(scratch_parent)) == []
        assert sorted(os.listdir(scratch_parent)) == sorted(
            os.path.basename(p) for p in (live, fresh, unknown, other)
        )
    finally:
        os.close(live_lock)


def test_a_root_locked_by_another_process_is_live(scratch_parent: Path) -> None:
    """The lock, not the pid in the name, says a zygote lives: one held by a process of
    another PID namespace counts, as one whose pid was reused by anything does not."""
    root, lock = make_scratch_root(str(scratch_parent), os.getpid())
    os.close(lock)
    _age(Path(root), 60)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time\n"
            "fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(60)\n",
            root,
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        assert live_scratch_roots(str(scratch_parent)) == [root]
        assert sweep_scratch_roots(str(scratch_parent)) == []
        assert os.path.isdir(root)
    finally:
        holder.kill()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()
    assert live_scratch_roots(str(scratch_parent)) == []
    assert sweep_scratch_roots(str(scratch_parent)) == []
    assert not os.path.exists(root)


def test_a_root_too_big_for_one_sweep_is_reported(
    scratch_parent: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, lock = make_scratch_root(str(scratch_parent), 104)
    os.close(lock)
    for i in range(30):
        (Path(root) / f"f{i}").write_text("x")
    _age(Path(root), 60)
    monkeypatch.setattr(supervise, "remove_tree", functools.partial(remove_tree, max_entries=10))
    assert sweep_scratch_roots(str(scratch_parent)) == [root]


def in_private_tmpfs(body: Callable[[str], Any], size_mb: int = 256) -> Any:
    """`body(directory)` in a forked child, `directory` a tmpfs of this child's own mount
    namespace: no other writer on the machine moves its free space."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a private tmpfs")
    directory = tempfile.mkdtemp(prefix="private-tmpfs-")

    def mounted() -> Any:
        linux.unshare(linux.CLONE_NEWNS)
        linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
        linux.mount("tmpfs", directory, "tmpfs", 0, f"size={size_mb}m")
        return body(directory)

    try:
        return in_child(mounted)
    finally:
        os.rmdir(directory)


def _hidden_write(workdir: str, mb: int) -> int:
    """A file of `mb` MiB in `workdir`, unlinked and held open; its fd."""
    fd = os.open(os.path.join(workdir, "hidden"), os.O_CREAT | os.O_WRONLY, 0o600)
    os.unlink(os.path.join(workdir, "hidden"))
    chunk = b"x" * (1 << 20)
    for _ in range(mb):
        os.write(fd, chunk)
    return fd


def _watch_sees(directory: str, hidden_mb: int, other_live_roots: int) -> list[bool]:
    """Whether a watch (quota 8 MiB) sees `hidden_mb` MiB unlinked but held open in its run's
    dir while `other_live_roots` other zygotes hold roots beside its own: polled, then final."""
    roots = [make_scratch_root(directory, 200 + i) for i in range(other_live_roots + 1)]
    workdir = os.path.join(roots[0][0], "run-1")
    os.mkdir(workdir)
    watch = ScratchWatch(workdir, scratch_mb=8)
    fd = _hidden_write(workdir, hidden_mb)
    watch.next = 0.0
    seen = [watch.exceeded()]
    os.close(fd)
    seen.append(watch.exceeded(final=True))
    return seen


def test_space_held_by_unlinked_files_is_over_quota() -> None:
    """24 MiB written to a file the run unlinked while holding it open, quota 8 MiB and no
    other zygote: the walk of its dir finds nothing, the free space says over quota."""
    assert in_private_tmpfs(lambda d: _watch_sees(d, 24, 0)) == [True, False]


def test_other_live_scratch_roots_each_allow_a_quota_of_unexplained_drop() -> None:
    """With three other zygotes' roots on the file system (their runs may be writing), a
    12 MiB drop is not blamed on this run; 40 MiB (past four quotas) is."""
    assert in_private_tmpfs(lambda d: _watch_sees(d, 12, 3)) == [False, False]
    assert in_private_tmpfs(lambda d: _watch_sees(d, 40, 3)) == [True, False]


def test_what_a_neighbour_s_dir_holds_is_not_blamed_on_this_run() -> None:
    """Another zygote's run writing 40 MiB of files beside a run that writes nothing: the
    drop is explained by the neighbour's dir, so this run is not over (that one's own watch
    judges it)."""

    def beside(directory: str) -> list[bool]:
        ours, theirs = (make_scratch_root(directory, 500 + i)[0] for i in range(2))
        workdir, neighbour = os.path.join(ours, "run-1"), os.path.join(theirs, "run-1")
        os.mkdir(workdir)
        os.mkdir(neighbour)
        watch = ScratchWatch(workdir, scratch_mb=8)
        with open(os.path.join(neighbour, "big"), "wb") as f:
            f.write(b"x" * (40 << 20))
        watch.next = 0.0
        return [watch.exceeded(), watch.exceeded(final=True)]

    assert in_private_tmpfs(beside) == [False, False]


def test_a_dir_the_walk_explains_is_judged_by_the_walk() -> None:
    """Visible files under the quota pass; over it they fail, however many roots live."""

    def visible(directory: str, mb: int) -> list[bool]:
        roots = [make_scratch_root(directory, 300 + i) for i in range(4)]
        workdir = os.path.join(roots[0][0], "run-1")
        os.mkdir(workdir)
        watch = ScratchWatch(workdir, scratch_mb=8)
        with open(os.path.join(workdir, "seen"), "wb") as f:
            f.write(b"x" * (mb << 20))
        watch.next = 0.0
        return [watch.exceeded(), watch.exceeded(final=True)]

    assert in_private_tmpfs(lambda d: visible(d, 6)) == [False, False]
    assert in_private_tmpfs(lambda d: visible(d, 12)) == [True, True]


def test_entries_past_the_quota_are_over_quota() -> None:
    """Empty files take no block but an inode each: past ENTRY_QUOTA entries the dir is over."""

    def many(directory: str, count: int) -> list[bool]:
        root, _ = make_scratch_root(directory, 400)
        workdir = os.path.join(root, "run-1")
        os.mkdir(workdir)
        watch = ScratchWatch(workdir, scratch_mb=8, entries=500)
        for i in range(count):
            os.close(os.open(os.path.join(workdir, f"e{i}"), os.O_CREAT | os.O_WRONLY, 0o600))
        watch.next = 0.0
        return [watch.exceeded(), watch.exceeded(final=True)]

    assert in_private_tmpfs(lambda d: many(d, 400)) == [False, False]
    assert in_private_tmpfs(lambda d: many(d, 700)) == [True, True]


THREADED = (
    "import sys, threading, time\nstop = threading.Event()\n"
    "for _ in range(int(sys.argv[1])):\n    threading.Thread(target=stop.wait).start()\n"
    "print('up', flush=True)\nsys.stdin.read()\nstop.set()\n"
)


@pytest.fixture
def threaded() -> Iterator[Callable[[int], int]]:
    """Start a process with n threads besides its main one; its pid."""
    started: list[subprocess.Popen[bytes]] = []

    def start(n: int) -> int:
        process = subprocess.Popen(
            [sys.executable, "-c", THREADED, str(n)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        started.append(process)
        assert process.stdout is not None and process.stdout.readline() == b"up\n"
        return process.pid

    yield start
    for process in started:
        process.kill()
        process.wait()
        for pipe in (process.stdin, process.stdout):
            if pipe is not None:
                pipe.close()


def test_the_thread_watch_counts_a_process_s_threads(threaded: Callable[[int], int]) -> None:
    pid = threaded(20)
    assert thread_count(pid) == 21
    over, within = ThreadWatch(pid, 10), ThreadWatch(pid, 21)
    over.next = within.next = 0.0
    assert over.exceeded() is True and within.exceeded() is False


def test_a_shared_uid_run_may_have_the_uid_s_tasks_plus_its_budget_and_margin(
    threaded: Callable[[int], int],
) -> None:
    """The limit moves with the uid's tasks: 30 more threads of the uid, 30 more allowed."""
    before = shared_uid_task_limit(os.getuid())
    threaded(30)
    after = shared_uid_task_limit(os.getuid())
    assert before >= THREADS + THREAD_MARGIN
    assert after - before >= 25  # other processes of the uid come and go meanwhile


def test_run_uids_are_claimed_one_per_zygote() -> None:
    """Two claims get two uids; a claim's uid is free again once its holder lets go."""
    first, second = claim_run_uid(), claim_run_uid()
    assert first is not None and second is not None
    try:
        assert first[0] != second[0]
        assert all(RUN_UID_BASE <= c[0] < RUN_UID_BASE + RUN_UID_SLOTS for c in (first, second))
        uid = first[0]
        first[1].close()
        again = claim_run_uid()
        assert again is not None and again[0] == uid
        again[1].close()
    finally:
        first[1].close()
        second[1].close()


def test_a_claim_is_refused_while_held(tmp_path: Path) -> None:
    """The name of a held claim cannot be bound again (the kernel's answer is EADDRINUSE)."""
    import socket

    claim = claim_run_uid()
    assert claim is not None
    try:
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with pytest.raises(OSError) as raised:
            probe.bind(f"\0reward-sandbox-run-uid-{claim[0]}")
        assert raised.value.errno == errno.EADDRINUSE
        probe.close()
    finally:
        claim[1].close()
