"""Moving a file home (router/src/relocation.rs): relocate."""

import errno
import os
import secrets
import tempfile
import threading
import unittest
from typing import List, Optional

from efs_router import (
    DROPPED_OLDER,
    MOVED,
    REPLACED_OLDER,
    SOURCE_GONE,
    NotARegularFile,
    OtherOwners,
    relocate,
)
from efs_router.relocation import recover
from helpers import (
    names,
    put,
    put_at,
    read,
    set_mtime,
)


class Relocate(unittest.TestCase):
    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.d = self._tmp.name
        self.src, self.dst = os.path.join(self.d, "a"), os.path.join(self.d, "b")

    def tearDown(self) -> None:
        self._tmp.cleanup()

    def test_moves_and_keeps_the_bytes(self) -> None:
        put(self.src, b"reading")
        ino = os.stat(self.src).st_ino
        self.assertEqual(relocate(self.src, self.dst), MOVED)
        self.assertFalse(os.path.lexists(self.src))
        self.assertEqual(read(self.dst), b"reading")
        st = os.stat(self.dst)
        self.assertEqual((st.st_ino, st.st_nlink), (ino, 1))  # the same file, one name: never a copy
        self.assertEqual(names(self.d), ["b"])

    def test_an_older_source_is_dropped_and_a_tie_goes_home(self) -> None:
        for src_secs, dst_secs in ((10, 20), (30, 30)):
            with self.subTest(src=src_secs, dst=dst_secs):
                put_at(self.src, b"old", src_secs)
                put_at(self.dst, b"new", dst_secs)
                self.assertEqual(relocate(self.src, self.dst), DROPPED_OLDER)
                self.assertFalse(os.path.lexists(self.src))
                self.assertEqual(read(self.dst), b"new")
                self.assertEqual(names(self.d), ["b"])

    def test_a_newer_source_replaces_the_destination(self) -> None:
        put_at(self.src, b"new", 20)
        put_at(self.dst, b"old", 10)
        ino = os.stat(self.src).st_ino
        self.assertEqual(relocate(self.src, self.dst), REPLACED_OLDER)
        self.assertFalse(os.path.lexists(self.src))
        self.assertEqual(read(self.dst), b"new")
        st = os.stat(self.dst)
        self.assertEqual((st.st_ino, st.st_nlink), (ino, 1))
        self.assertEqual(names(self.d), ["b"])
        put_at(self.src, b"newer by a nanosecond", 0, 1)  # nanoseconds count
        put_at(self.dst, b"older", 0)
        self.assertEqual(relocate(self.src, self.dst), REPLACED_OLDER)
        self.assertEqual(read(self.dst), b"newer by a nanosecond")

    def test_a_missing_source_is_gone_not_an_error(self) -> None:
        self.assertEqual(relocate(self.src, self.dst), SOURCE_GONE)
        put(self.dst, b"moved by another")
        self.assertEqual(relocate(self.src, self.dst), SOURCE_GONE)
        self.assertEqual(read(self.dst), b"moved by another")

    def test_a_move_cut_short_after_the_link_is_finished(self) -> None:
        put(self.src, b"x")
        os.link(self.src, self.dst)
        self.assertEqual(relocate(self.src, self.dst), MOVED)
        self.assertFalse(os.path.lexists(self.src))
        self.assertEqual(read(self.dst), b"x")
        self.assertEqual(os.stat(self.dst).st_nlink, 1)

    def test_one_file_however_spelled_is_refused_and_kept(self) -> None:
        os.mkdir(os.path.join(self.d, "sub"))
        os.symlink(".", os.path.join(self.d, "here"))
        put(self.src, b"only copy")
        for other in (self.src, self.d + "//a", os.path.join(self.d, ".", "a"), os.path.join(self.d, "sub", "..", "a"),
                      os.path.join(self.d, "here", "a"), os.path.join(self.d, "here", "sub", "..", "here", "a")):
            for src, dst in ((self.src, other), (other, self.src)):
                with self.subTest(src=src, dst=dst), self.assertRaises(OSError) as cm:
                    relocate(src, dst)
                self.assertEqual(cm.exception.errno, errno.EINVAL)
                self.assertEqual(read(self.src), b"only copy")
        cwd = os.getcwd()
        os.chdir(self.d)
        try:
            with self.assertRaises(OSError) as cm:
                relocate("./a", "a")
            self.assertEqual(cm.exception.errno, errno.EINVAL)
        finally:
            os.chdir(cwd)
        self.assertEqual(names(self.d), ["a", "here", "sub"])

    def test_the_routers_own_files_are_never_moved(self) -> None:
        tmp = os.path.join(self.d, ".efs-router-0123456789abcdef.tmp")
        put(tmp, b"a write in progress")
        put(self.src, b"x")
        for src, dst in ((tmp, self.dst), (self.src, os.path.join(self.d, ".efs-router-0123456789abcdef.moving"))):
            with self.subTest(src=src, dst=dst), self.assertRaises(OSError) as cm:
                relocate(src, dst)
            self.assertEqual(cm.exception.errno, errno.EINVAL)
        self.assertEqual(names(self.d), [".efs-router-0123456789abcdef.tmp", "a"])

    def test_links_fifos_and_directories_are_not_data(self) -> None:
        put_at(self.src, b"x", 10)
        link, fifo, directory = (os.path.join(self.d, n) for n in ("link", "fifo", "dir"))
        os.symlink("a", link)
        os.mkfifo(fifo)
        os.mkdir(directory)
        for src, dst, bad, what in ((link, "moved-link", link, "symbolic link"), (fifo, "moved-fifo", fifo, "FIFO"),
                                    (directory, "moved-dir", directory, "directory"),
                                    (self.src, directory, directory, "directory"),
                                    (self.src, link, link, "symbolic link")):
            with self.subTest(src=src, dst=dst), self.assertRaises(NotARegularFile) as cm:
                relocate(src, os.path.join(self.d, dst))
            self.assertEqual((cm.exception.path, cm.exception.what), (bad, what))
            self.assertIsInstance(cm.exception, OSError)
        self.assertEqual(names(self.d), ["a", "dir", "fifo", "link"])
        self.assertEqual(read(self.src), b"x")

    def test_a_missing_destination_directory_is_an_error_and_the_source_stays(self) -> None:
        put(self.src, b"reading")
        with self.assertRaises(FileNotFoundError):
            relocate(self.src, os.path.join(self.d, "no-such-dir", "b"))
        self.assertEqual(read(self.src), b"reading")

    def test_a_cut_short_replace_is_given_back_by_name(self) -> None:
        # The replace died after its link, and a writer then replaced the source: the private directory holds the
        # only name of the version linked, under the name it was to replace. Newer than home, it replaces home;
        # older, it is dropped.
        for home_secs, want in ((10, b"linked"), (40, b"home")):
            with self.subTest(home=home_secs):
                put_at(self.dst, b"home", home_secs)
                qd = os.path.join(self.d, ".efs-router-%s.moving" % secrets.token_hex(8))
                os.mkdir(qd)
                put_at(os.path.join(qd, "b"), b"linked", 20)
                self.assertEqual(recover(qd), 1)
                self.assertEqual(read(self.dst), want)
                self.assertEqual(names(self.d), ["b"])

    def test_a_cut_short_move_of_a_path_deleted_since_is_not_brought_back(self) -> None:
        # The move linked the file home, its retire took the source's name and died; a client then deleted the
        # path at home. With ``found``, the hidden name is dropped; a path still somewhere goes back.
        pd = os.path.join(self.d, ".efs-router-%s.moving" % secrets.token_hex(8))
        os.mkdir(pd)
        put_at(os.path.join(pd, "gone"), b"deleted", 10)
        put_at(os.path.join(pd, "kept"), b"kept", 10)
        put_at(os.path.join(self.d, "elsewhere-kept"), b"", 10)
        self.assertEqual(recover(pd, lambda name: name == "kept"), 2)
        self.assertEqual(sorted(names(self.d)), ["elsewhere-kept", "kept"])

    def test_other_failures_raise(self) -> None:
        put(self.src, b"x")
        with self.assertRaises(FileNotFoundError):  # the destination's directory must exist
            relocate(self.src, os.path.join(self.d, "no", "b"))
        self.assertEqual(read(self.src), b"x")

    def test_racing_movers_leave_exactly_one_copy(self) -> None:
        for rnd in range(50):
            src, dst = os.path.join(self.d, "s%d" % rnd), os.path.join(self.d, "d%d" % rnd)
            put(src, str(rnd).encode())
            older = rnd % 3 == 0  # every third round home holds an older copy, which the movers replace
            if older:
                set_mtime(src, 20)
                put_at(dst, b"older", 10)
            barrier = threading.Barrier(4)
            outcomes: List[str] = []

            def mover(src: str, dst: str, barrier: threading.Barrier, outcomes: List[str]) -> None:
                barrier.wait()
                outcomes.append(relocate(src, dst))

            ts = [threading.Thread(target=mover, args=(src, dst, barrier, outcomes)) for _ in range(4)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            self.assertEqual(len(outcomes), 4)
            reporting = [o for o in outcomes if o != SOURCE_GONE]
            self.assertEqual(len(reporting), 1, outcomes)
            if not older:
                self.assertEqual(reporting, [MOVED])
            self.assertFalse(os.path.lexists(src))
            self.assertEqual(read(dst), str(rnd).encode())
            self.assertEqual(os.stat(dst).st_nlink, 1)
        self.assertEqual(sorted(os.listdir(self.d)), sorted("d%d" % i for i in range(50)))


if __name__ == "__main__":
    unittest.main()


class Owners(unittest.TestCase):
    """One owner's file never takes another's name (Rust relocation::tests, one_owners_file_never_takes_anothers_name).
    These tests run as root, as the function does: chown must work."""

    def test_one_owners_file_never_takes_anothers_name(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            a, b = os.path.join(d, "a"), os.path.join(d, "b")
            os.mkdir(a)
            os.mkdir(b)

            def put(path: str, data: bytes, secs: int, uid: Optional[int] = None) -> None:
                with open(path, "wb") as f:
                    f.write(data)
                os.utime(path, ns=(0, (1_700_000_000 + secs) * 1_000_000_000))
                if uid is not None:
                    os.chown(path, uid, -1)

            put(os.path.join(b, "f"), b"theirs", 10, uid=1000)
            put(os.path.join(a, "f"), b"planted, dated later", 20)
            with self.assertRaises(OtherOwners) as caught:
                relocate(os.path.join(a, "f"), os.path.join(b, "f"))
            self.assertEqual((caught.exception.src_uid, caught.exception.dst_uid), (os.getuid(), 1000))
            put(os.path.join(b, "g"), b"theirs, dated later", 30, uid=1000)
            put(os.path.join(a, "g"), b"mine", 20)
            with self.assertRaises(OtherOwners):
                relocate(os.path.join(a, "g"), os.path.join(b, "g"))
            put(os.path.join(b, "h"), b"older", 10)
            put(os.path.join(a, "h"), b"newer", 20)
            self.assertEqual(relocate(os.path.join(a, "h"), os.path.join(b, "h")), REPLACED_OLDER)
            for name, data in (("f", b"theirs"), ("g", b"theirs, dated later"), ("h", b"newer")):
                with open(os.path.join(b, name), "rb") as f:
                    self.assertEqual(f.read(), data)
            self.assertEqual(sorted(os.listdir(a)), ["f", "g"])
