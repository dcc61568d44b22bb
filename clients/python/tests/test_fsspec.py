"""The fsspec file system (efs_router.fsspec_fs): found by its entry point, a pandas round trip through
``efs-router://`` URLs, and what each method does across shards (fsspec's own suites: tests/fsspec_suites.py)."""

import errno
import os
import tempfile
from typing import Any, Dict, List

import dask.dataframe
import fsspec
import pandas
import pyarrow
import pyarrow.dataset
import pyarrow.parquet

from efs_router import Router
from efs_router.fsspec_fs import EfsRouterFileSystem
from helpers import THREE, FileSystemCase, MotoServerCase, files_under, make_list, put, put_at, read
from test_listing import cases, make_tree, routers


class FsspecCase(FileSystemCase):
    def setUp(self) -> None:
        super().setUp()
        self.options: Dict[str, Any] = {"mount": self.base, "list_json": make_list(THREE).to_json(),
                                        "report": False}
        self.fs = EfsRouterFileSystem(**self.options, skip_instance_cache=True)
        self.r = self.fs.router
        # Instances fsspec made from URLs (pandas) hold routers on this test's directory: not kept past it.
        self.addCleanup(EfsRouterFileSystem.clear_instance_cache)


class Registration(FsspecCase):
    def test_the_entry_point_names_the_class(self) -> None:
        self.assertIs(fsspec.get_filesystem_class("efs-router"), EfsRouterFileSystem)
        fs = fsspec.filesystem("efs-router", **self.options, skip_instance_cache=True)
        self.assertIsInstance(fs, EfsRouterFileSystem)

    def test_a_url_is_a_logical_path(self) -> None:
        self.assertEqual(EfsRouterFileSystem._strip_protocol("efs-router://data/analysis/x.json"),
                         "/data/analysis/x.json")
        self.assertEqual(EfsRouterFileSystem._strip_protocol("/data/analysis/"), "/data/analysis")
        self.assertEqual(EfsRouterFileSystem._strip_protocol("efs-router://"), "")
        with fsspec.open("efs-router://data/analysis/x.json", "wb", **self.options) as f:
            f.write(b"by url")
        self.assertEqual(read(self.r.resolve("data/analysis/x.json").real), b"by url")

    def test_the_options_are_checked(self) -> None:
        text = make_list(THREE).to_json()
        for bad in ({"list_json": text}, {"mount": self.base}, {"mount": self.base, "mounts": [self.base] * 3,
                                                                 "list_json": text},
                    {"mount": self.base, "list_json": text, "colour": "blue"},
                    {"router": self.r, "mount": self.base}, {"mount": self.base, "list_json": text,
                                                             "refresh_seconds": 60}):
            with self.assertRaises(TypeError, msg=repr(sorted(bad))):
                EfsRouterFileSystem(**bad, skip_instance_cache=True)

    def test_a_router_of_the_application_is_used_as_it_is(self) -> None:
        router = self.router()
        fs = EfsRouterFileSystem(router=router, skip_instance_cache=True)
        self.assertIs(fs.router, router)

    def test_a_router_made_from_the_list_reports_it_unless_told_not_to(self) -> None:
        fs = EfsRouterFileSystem(mount=self.base, list_json=make_list(THREE).to_json(), label="fsspec-test",
                                 skip_instance_cache=True)
        self.addCleanup(fs.router.close)
        report = fs.router.report_file
        self.assertIsNotNone(report)
        assert report is not None
        self.assertEqual(os.path.dirname(report), os.path.join(self.base, ".efs-router-clients"))
        self.assertTrue(os.path.isfile(report))
        self.assertEqual(fs.ls("", detail=False), [])  # the router's own name is never listed, nor other shards
        self.assertIsNone(self.fs.router.report_file)


class PandasRoundTrip(FsspecCase):
    def test_a_frame_written_by_url_reads_back_equal_from_its_home_shard(self) -> None:
        frame = pandas.DataFrame({"device": [42, 43, 44], "reading": [0.5, 1.25, -3.0], "ok": [True, False, True]})
        url = "efs-router://data/analysis/device-42-1700000000.json"
        frame.to_json(url, orient="records", storage_options=self.options)
        back = pandas.read_json(url, orient="records", storage_options=self.options)
        pandas.testing.assert_frame_equal(back, frame)
        logical = "data/analysis/device-42-1700000000.json"
        holding = [j for j in range(len(THREE)) if os.path.exists(self.r.layout.real_path(self.r.shards, j, logical))]
        self.assertEqual(holding, [self.r.resolve(logical).index])  # at home, and nowhere else
        self.assertEqual(len(files_under(self.base)), 1)

    def test_a_frame_whose_file_is_in_another_shard_is_read(self) -> None:
        path, home, other = self.misplaced(self.r, 0, 2, "pandas")
        put(other, b'[{"device":7,"reading":1.5}]')
        back = pandas.read_json("efs-router://" + path, orient="records", storage_options=self.options)
        self.assertEqual(back.to_dict("records"), [{"device": 7, "reading": 1.5}])
        self.assertEqual(read(home), b'[{"device":7,"reading":1.5}]')  # the read moved it home
        self.assertFalse(os.path.exists(other))


class DataStack(FsspecCase):
    """The paths the docs show, as pyarrow and dask write them: with or without a leading '/', or a URL."""

    def test_a_pyarrow_dataset_round_trips_with_or_without_a_leading_slash(self) -> None:
        table = pyarrow.table({"device": list(range(12)), "reading": [i * 0.5 for i in range(12)]})
        for path in ("data/parquet", "/data/parquet-rooted"):
            with self.subTest(path=path):
                pyarrow.parquet.write_to_dataset(table, path, filesystem=self.fs, partition_cols=["device"])
                back = pyarrow.dataset.dataset(path, filesystem=self.fs, format="parquet",
                                               partitioning="hive").to_table()
                self.assertEqual(sorted(back.column("device").to_pylist()), list(range(12)))
                # Each part in its own home shard: the dataset spans the shards.
                homes = {self.r.resolve(f.lstrip("/")).index for f in self.fs.find(path)}
                self.assertGreater(len(homes), 1, homes)

    def test_dask_reads_json_over_a_glob(self) -> None:
        for i in range(6):
            frame = pandas.DataFrame({"device": [i], "reading": [i * 0.5]})
            self.fs.pipe_file("data/json/part-%d.json" % i, frame.to_json(orient="records", lines=True).encode())
        for pattern in ("efs-router://data/json/*.json", "data/json/part-*.json"):
            with self.subTest(pattern=pattern):
                url = pattern if pattern.startswith("efs-router://") else "efs-router://" + pattern
                read = dask.dataframe.read_json(url, lines=True, storage_options=self.options).compute()
                self.assertEqual(sorted(read["device"].tolist()), list(range(6)))


class Files(FsspecCase):
    def test_open_to_write_is_an_atomic_write_at_home(self) -> None:
        with self.fs.open("/data/analysis/a.json", "wb") as f:
            f.write(b"one ")
            f.write(b"two")
            self.assertFalse(os.path.exists(self.r.resolve("data/analysis/a.json").real))  # nothing before close
        self.assertEqual(read(self.r.resolve("data/analysis/a.json").real), b"one two")
        with self.fs.open("data/analysis/a.json", "w") as t:  # text: fsspec wraps the binary file
            t.write("three")
        self.assertEqual(self.fs.cat_file("data/analysis/a.json"), b"three")

    def test_an_error_in_the_block_writes_nothing(self) -> None:
        self.fs.pipe_file("data/analysis/a.json", b"old")
        with self.assertRaises(KeyError):
            with self.fs.open("data/analysis/a.json", "wb") as f:
                f.write(b"half")
                raise KeyError("stop")
        self.assertEqual(self.fs.cat_file("data/analysis/a.json"), b"old")

    def test_exclusive_create_refuses_a_path_in_any_shard(self) -> None:
        path, home, other = self.misplaced(self.r, 0, 1, "x")
        put(other, b"elsewhere")
        with self.assertRaises(FileExistsError):
            self.fs.open(path, "xb")
        with self.assertRaises(FileExistsError):
            self.fs.pipe_file(path, b"new", mode="create")
        self.assertFalse(os.path.exists(home))
        self.assertEqual(read(other), b"elsewhere")

    def test_exclusive_create_decides_at_close(self) -> None:
        f = self.fs.open("data/analysis/late.json", "xb")
        f.write(b"mine")
        self.fs.pipe_file("data/analysis/late.json", b"theirs")  # another writer, between open and close
        with self.assertRaises(FileExistsError):
            f.close()
        self.assertEqual(self.fs.cat_file("data/analysis/late.json"), b"theirs")
        with self.fs.open("data/analysis/new.json", "xb") as g:
            g.write(b"first")
        self.assertEqual(self.fs.cat_file("data/analysis/new.json"), b"first")

    def test_a_copy_in_another_shard_is_read(self) -> None:
        path, home, other = self.misplaced(self.r, 1, 2, "read")
        put(other, b"0123456789")
        self.assertEqual(self.fs.info(path)["shard"], 2)
        self.assertEqual(self.fs.cat_file(path, start=2, end=5), b"234")
        self.assertEqual(self.fs.cat_file(path, start=-3), b"789")
        with self.fs.open("efs-router://" + path, "rb") as f:
            self.assertEqual(f.read(), b"0123456789")
            with self.assertRaises(OSError):
                f.write(b"no")
        self.assertEqual(self.fs.info(path)["shard"], 1)  # the first read moved it home

    def test_rm_removes_every_copy(self) -> None:
        path, home, other = self.misplaced(self.r, 0, 2, "rm")
        put(home, b"home")
        put(other, b"stale")
        self.fs.rm(path)
        self.assertFalse(os.path.exists(home))
        self.assertFalse(os.path.exists(other))
        self.assertFalse(self.fs.exists(path))
        with self.assertRaises(FileNotFoundError):
            self.fs.rm_file(path)

    def test_a_transaction_writes_when_it_ends(self) -> None:
        with self.fs.transaction:
            with self.fs.open("data/t.json", "wb") as f:
                f.write(b"later")
            self.assertFalse(self.fs.exists("data/t.json"))
        self.assertEqual(self.fs.cat_file("data/t.json"), b"later")

    def test_other_modes_are_refused(self) -> None:
        self.fs.pipe_file("data/a.json", b"a")
        for mode in ("ab", "r+b", "wb+"):
            with self.assertRaises(ValueError, msg=mode):
                self.fs.open("data/a.json", mode)


class Tree(FsspecCase):
    def test_ls_is_the_union_of_the_shards(self) -> None:
        paths = ["data/analysis/device-%d.json" % i for i in range(12)]
        for i, p in enumerate(paths):
            self.fs.pipe_file(p, b"x" * i)
        homes = {self.r.resolve(p).index for p in paths}
        self.assertEqual(homes, {0, 1, 2})  # spread over every shard
        listed = self.fs.ls("/data/analysis", detail=True)
        self.assertEqual(sorted(e["name"] for e in listed), sorted("/" + p for p in paths))
        for e in listed:
            p = e["name"][1:]
            self.assertEqual((e["type"], e["size"], e["shard"], e["shards"]),
                             ("file", int(p.split("-")[1].split(".")[0]), self.r.resolve(p).index,
                              [self.r.resolve(p).index]))
        self.assertEqual(self.fs.ls("", detail=False), ["/data"])
        # Names are spelled as the path asked about: without a leading '/', as s3fs names them, for a relative one.
        self.assertEqual(self.fs.ls("data/analysis/device-3.json", detail=False), ["data/analysis/device-3.json"])
        self.assertEqual(self.fs.ls("/data/analysis/device-3.json", detail=False), ["/data/analysis/device-3.json"])
        self.assertEqual(self.fs.find("data"), sorted(paths))
        self.assertEqual(self.fs.find("/data"), sorted("/" + p for p in paths))
        self.assertEqual(self.fs.glob("/data/*/device-1*.json"),
                         ["/data/analysis/device-1.json", "/data/analysis/device-10.json",
                          "/data/analysis/device-11.json"])
        with self.assertRaises(FileNotFoundError):
            self.fs.ls("data/nothing")

    def test_info_is_what_ls_gives_in_the_shared_cases(self) -> None:
        for case in cases():
            with tempfile.TemporaryDirectory() as base:
                make_tree(base, case)
                for layout, router in routers(base, case):
                    fs = EfsRouterFileSystem(router=router, skip_instance_cache=True)
                    at = "%s (%s)" % (case["name"], layout)
                    for d, want in case["listings"].items():
                        listed = fs.ls(d, detail=True)
                        self.assertEqual([spelled(router, e) for e in listed], [spelled_vector(d, w) for w in want],
                                         "%s: %r" % (at, d))
                        for e in listed:
                            self.assertEqual(fs.info(e["name"]), e, "%s: %s" % (at, e["name"]))
                    for item in case["tree"]:  # a link, FIFO or private name the listing leaves out: no info either
                        d, _, name = item["path"].rpartition("/")
                        if d in case["listings"] and name not in [w["name"] for w in case["listings"][d]]:
                            with self.assertRaises(FileNotFoundError, msg="%s: %s" % (at, item["path"])):
                                fs.info(item["path"])

    def test_a_path_the_router_refuses_is_in_no_shard(self) -> None:
        put(os.path.join(self.base, "shards", "use1-az4", "data", "x.json"), b"x")
        for path in ("/shards/use1-az4/data/x.json", "/shards/use1-az4", ".efs-router-clients", "data/../.."):
            with self.assertRaises(FileNotFoundError, msg=path):
                self.fs.info(path)
            self.assertEqual((self.fs.exists(path), self.fs.isdir(path), self.fs.isfile(path)), (False, False, False),
                             path)
        self.assertEqual(self.fs.find(""), ["/data/x.json"])  # the other shard's file, by its logical path

    def test_sizes_of_a_listing_follow_a_copy_moved_since(self) -> None:
        path, home, other = self.misplaced(self.r, 0, 1, "gone")
        put(other, b"abc")
        lister = self.r._lister()
        entries = lister.scandir("data/analysis")
        self.assertEqual([e.index for e in entries], [1])
        os.makedirs(os.path.dirname(home))
        os.rename(other, home)  # another client's read moved it home after the listing
        [e] = lister.with_stats("data/analysis", entries)
        self.assertEqual((e.path, e.index, e.stat().st_size), (path, 0, 3))
        entries = lister.scandir("data/analysis")
        os.unlink(home)  # deleted after the listing
        self.assertEqual(lister.with_stats("data/analysis", entries), [])

    def test_mkdir_makes_an_empty_directory_and_rmdir_removes_it_everywhere(self) -> None:
        self.fs.mkdir("/empty/inner")
        self.assertEqual(self.fs.info("empty/inner")["type"], "directory")
        self.assertEqual(self.fs.ls("empty/inner"), [])
        self.assertTrue(os.path.isdir(self.r.resolve("empty/inner").real))  # where a file of that path would go
        with self.assertRaises(FileExistsError):
            self.fs.mkdir("empty/inner")
        with self.assertRaises(FileNotFoundError):
            self.fs.mkdir("none/inner", create_parents=False)
        self.fs.makedirs("empty/inner", exist_ok=True)
        for j in range(len(THREE)):  # the directory in every shard, as writes below it would leave it
            os.makedirs(self.r.layout.real_path(self.r.shards, j, "empty/inner"), exist_ok=True)
        self.fs.rmdir("empty/inner")
        self.assertFalse(self.fs.exists("empty/inner"))
        self.assertEqual([j for j in range(len(THREE))
                          if os.path.exists(self.r.layout.real_path(self.r.shards, j, "empty/inner"))], [])

    def test_rmdir_refuses_a_directory_that_is_not_empty(self) -> None:
        self.fs.pipe_file("full/a.json", b"a")
        with self.assertRaises(OSError) as c:
            self.fs.rmdir("full")
        self.assertEqual(c.exception.errno, errno.ENOTEMPTY)
        self.fs.rm("full", recursive=True)
        self.assertFalse(self.fs.exists("full"))
        self.assertEqual(files_under(self.base), [])

    def test_a_newer_copy_elsewhere_is_the_listed_one(self) -> None:
        path, home, other = self.misplaced(self.r, 0, 1, "new")
        third = self.r.layout.real_path(self.r.shards, 2, path)
        put_at(other, b"older", 100)
        put_at(third, b"newest!", 200)
        self.assertEqual((self.fs.info(path)["shard"], self.fs.info(path)["size"]), (2, 7))
        self.assertEqual(self.fs.modified(path).timestamp(), 1_700_000_200)


def spelled(router: Router, info: Dict[str, Any]) -> Dict[str, Any]:
    """An ``ls`` entry in the listing vectors' words."""
    return {"name": info["name"].rsplit("/", 1)[-1], "kind": "dir" if info["type"] == "directory" else "file",
            "root": router.shards[info["shard"]].root, "roots": [router.shards[i].root for i in info["shards"]]}


def spelled_vector(d: str, want: Dict[str, Any]) -> Dict[str, Any]:
    return {k: want[k] for k in ("name", "kind", "root", "roots")}


class FromSsm(MotoServerCase):
    def test_the_list_is_read_from_the_parameter(self) -> None:
        with tempfile.TemporaryDirectory() as base:
            for r in THREE:
                os.makedirs(os.path.join(base, r.lstrip("/")), exist_ok=True)
            name = "/efs-mount-autoscaling/fsspec-test"
            self.ssm.put_parameter(Name=name, Value=make_list(THREE).to_json(), Type="String", Overwrite=True)
            fs = fsspec.filesystem("efs-router", mount=base, parameter_name=name, ssm_client=self.ssm, report=False,
                                   skip_instance_cache=True)
            fs.pipe_file("data/analysis/ssm.json", b"routed")
            self.assertEqual(fs.router.list, make_list(THREE))
            self.assertEqual(read(fs.router.resolve("data/analysis/ssm.json").real), b"routed")
            found: List[str] = fs.find("")
            self.assertEqual(found, ["/data/analysis/ssm.json"])
