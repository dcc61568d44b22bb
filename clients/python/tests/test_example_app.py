"""The example application, examples/app/writer.py, against a moto_server (as test_ssm.py's) and a temporary
directory as the file system root: plain paths while the list is not published, the router once it is, each
reading written once and found, and the router's report. Nothing is skipped: without boto3 or moto it fails."""

import hashlib
import http.server
import importlib.util
import json
import os
import re
import stat
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar, Dict, List, Tuple
from unittest import mock

from efs_router import Layout, ListError, MountTargetList, Router, Target
from efs_router import ssm as efs_router_ssm
from efs_router.report import parse_report
from helpers import MotoServerCase, files_under, read
from test_ssm import Clock  # as the SSM tests: a router's clock

# examples/ is not a package, and the tests run against the installed efs_router from outside the clone:
# the example is found from this file's place in the repository.
WRITER = Path(__file__).resolve().parents[3] / "examples" / "app" / "writer.py"
TASK_ARN = "arn:aws:ecs:us-east-1:123456789012:task/iot/0123456789abcdef0123456789abcdef"
SECOND_ROOT = "/shards/use1-az2"
# The lists as the function publishes them: the first, one shard at /; then a second mount target's.
FIRST = Target("fsmt-0a1b2c3d", "10.0.1.4", az="us-east-1a", az_id="use1-az6", subnet_id="subnet-a", root="/")
SECOND = Target("fsmt-4e5f6a7b", "10.0.2.7", az="us-east-1b", az_id="use1-az2", subnet_id="subnet-b",
                root=SECOND_ROOT)
ONE = MountTargetList([FIRST]).to_json()
TWO = MountTargetList([FIRST, SECOND]).to_json()


def load_writer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("example_app_writer", WRITER)
    if spec is None or spec.loader is None:
        raise AssertionError("cannot load the example %s" % WRITER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Metadata(http.server.BaseHTTPRequestHandler):
    """The ECS task metadata endpoint, as far as the report reads it: ``<uri>/task``."""

    def do_GET(self) -> None:
        body = json.dumps({"TaskARN": TASK_ARN}).encode() if self.path == "/v4/task" else b"{}"
        self.send_response(200 if self.path == "/v4/task" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class ExampleApp(MotoServerCase):
    writer: ClassVar[ModuleType]
    metadata: ClassVar[http.server.ThreadingHTTPServer]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.writer = load_writer()
        cls.metadata = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Metadata)
        cls.addClassCleanup(cls.metadata.server_close)
        threading.Thread(target=cls.metadata.serve_forever, daemon=True).start()
        cls.addClassCleanup(cls.metadata.shutdown)
        # The task metadata endpoint, as ECS sets it in each container.
        cls.env = dict(cls.env, ECS_CONTAINER_METADATA_URI_V4="http://127.0.0.1:%d/v4" % cls.metadata.server_address[1])

    def setUp(self) -> None:
        super().setUp()
        self.name = "/efs-mount-autoscaling/%s/mount-targets" % self.id().rsplit(".", 1)[-1]
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.base = tmp.name
        self.clock = Clock()

    def publish(self, value: str) -> int:
        """Puts the list as the function does; answers the parameter's version."""
        version: int = self.ssm.put_parameter(Name=self.name, Value=value, Type="String", Overwrite=True)["Version"]
        return version

    def routing(self, refresh_seconds: float = 60) -> Any:
        routing = self.writer.Routing(self.name, self.base, self.ssm, refresh_seconds=refresh_seconds,
                                      label="device-writer", clock=self.clock)
        self.addCleanup(routing.close)
        return routing

    def write(self, routing: Any, readings: Dict[Tuple[int, int], bytes], device_id: int, timestamp: int) -> str:
        """One reading through the app, as its loop writes it; answers its logical path."""
        payload = self.writer.reading(device_id, timestamp)
        self.assertTrue(self.writer.write_reading(routing.current(), device_id, timestamp, payload))
        readings[(device_id, timestamp)] = payload
        path: str = self.writer.reading_path(device_id, timestamp)
        return path

    def copies(self) -> Dict[str, List[str]]:
        """Each reading's file name, and the shard roots holding a file of that name."""
        found: Dict[str, List[str]] = {}
        for root in ("/", SECOND_ROOT):
            directory = os.path.join(self.base, root.lstrip("/"), "data", "analysis")
            for name in files_under(directory) if os.path.isdir(directory) else []:
                found.setdefault(name, []).append(root)
        return found

    def test_plain_paths_until_the_list_is_published_then_the_router(self) -> None:
        readings: Dict[Tuple[int, int], bytes] = {}
        with self.assertLogs("writer", "WARNING") as logs:
            routing = self.routing()
            plain = [self.write(routing, readings, d, 100) for d in range(20)]
        self.assertIn("not published yet", logs.output[0])
        self.assertIsInstance(routing.current(), self.writer.PlainPaths)
        # Plain paths are the first shard's files: where a router on a one-shard list rooted at / puts them.
        one_shard = Router(MountTargetList.from_json(ONE), Layout.single_mount(self.base))
        for p in plain:
            self.assertTrue(os.path.isfile(os.path.join(self.base, p)))
            self.assertEqual(one_shard.resolve(p).real, os.path.join(self.base, p))
        self.assertEqual(files_under(os.path.join(self.base, "data", "analysis")),
                         sorted(os.path.basename(p) for p in plain))
        self.assertFalse(os.path.exists(os.path.join(self.base, ".efs-router-clients")))  # no router, no report

        # Published, but not looked for again until the retry period has passed.
        self.publish(ONE)
        self.clock.now += 59
        plain += [self.write(routing, readings, d, 101) for d in range(5)]
        self.assertIsNone(routing.router)
        self.clock.now += 1
        router = routing.current()
        self.assertIsInstance(router, Router)
        self.assertEqual(router.list, MountTargetList.from_json(ONE))
        routed = [self.write(routing, readings, d, 102) for d in range(10)]
        for p in plain + routed:
            self.assertEqual(router.locate(p).found.kind, "home")

        # The function adds a shard (it makes the directory first) and publishes; the app refreshes.
        os.makedirs(os.path.join(self.base, SECOND_ROOT.lstrip("/"), "data", "analysis"))
        self.publish(TWO)
        self.clock.now += 60
        routed += [self.write(routing, readings, d, 103) for d in range(40)]
        self.assertIs(routing.current(), router)
        self.assertEqual(router.list, MountTargetList.from_json(TWO))
        for p in routed[10:]:
            home = router.resolve(p)
            self.assertTrue(os.path.isfile(home.real), p)
        homes = {router.resolve(p).index for p in routed[10:]}
        self.assertEqual(homes, {0, 1})  # the new shard takes new files
        # Files written before the second shard whose home is now that shard: found where they are.
        elsewhere = [p for p in plain + routed[:10] if router.resolve(p).index == 1]
        self.assertTrue(elsewhere)
        for p in elsewhere:
            self.assertEqual(router.locate(p).found.kind, "elsewhere")

        # Check-then-write never replaces a reading, wherever it is, nor writes a second copy.
        for device_id, timestamp in readings:
            again = b'{"replaced": true}'
            self.assertFalse(self.writer.write_reading(routing.current(), device_id, timestamp, again))
        copies = self.copies()
        self.assertEqual(sorted(copies), sorted(os.path.basename(p) for p in plain + routed))  # nothing else
        self.assertEqual({name: len(roots) for name, roots in copies.items() if len(roots) != 1}, {})
        for (device_id, timestamp), payload in readings.items():
            self.assertEqual(router.read_with_fallback(self.writer.reading_path(device_id, timestamp)).data, payload)

    def test_the_apps_router_reports(self) -> None:
        version = self.publish(TWO)
        routing = self.routing()
        router = routing.current()
        self.assertIsInstance(router, Router)
        reports = os.path.join(self.base, ".efs-router-clients")
        self.assertEqual(router.report_file, os.path.join(reports, "%s.json" % router.client_id))
        self.assertEqual(stat.S_IMODE(os.stat(reports).st_mode), 0o1777)
        report = parse_report(os.path.basename(router.report_file), read(router.report_file))
        self.assertEqual(report["list"], {"sha256": hashlib.sha256(TWO.encode()).hexdigest(), "version": 1,
                                          "parameter_version": version})
        self.assertEqual(report["task"], TASK_ARN)
        self.assertEqual(report["label"], "device-writer")
        self.assertTrue(report["router"].startswith("efs-router-python/"))
        self.writer.write_reading(router, 7, 100, self.writer.reading(7, 100))
        routing.close()  # the app's end: the report goes with it
        self.assertEqual(os.listdir(reports), [])

    def test_only_a_missing_parameter_means_plain_paths(self) -> None:
        from botocore.exceptions import ClientError

        denied = ClientError({"Error": {"Code": "AccessDeniedException", "Message": "not authorized"}}, "GetParameter")
        with mock.patch.object(self.ssm, "get_parameter", side_effect=denied):
            with self.assertRaises(ClientError):
                self.routing().current()
        self.publish("not a list")
        with self.assertRaises(ListError):
            self.routing().current()

    def throttled(self, times: int) -> Tuple[Any, List[float]]:
        """``get_parameter`` throttled ``times`` times, then moto's answer; and the list the app's pauses go to.
        efs_router's own pauses are recorded, not slept; every pause is drawn at its bound."""
        from botocore.exceptions import ClientError

        real = self.ssm.get_parameter
        left = [times]

        def get_parameter(**kwargs: Any) -> Any:
            if left[0] > 0:
                left[0] -= 1
                raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}},
                                  "GetParameter")
            return real(**kwargs)

        patcher = mock.patch.object(self.ssm, "get_parameter", side_effect=get_parameter)
        patched = patcher.start()
        self.addCleanup(patcher.stop)
        package_pauses: List[float] = []
        for name, value in (("_sleep", package_pauses.append), ("_draw", lambda low, high: high)):
            p = mock.patch.object(efs_router_ssm, name, value)
            p.start()
            self.addCleanup(p.stop)
        return patched, package_pauses

    def routing_with_pauses(self) -> Tuple[Any, List[float]]:
        pauses: List[float] = []
        routing = self.writer.Routing(self.name, self.base, self.ssm, refresh_seconds=60, label="device-writer",
                                      clock=self.clock, sleep=pauses.append, draw=lambda low, high: high)
        self.addCleanup(routing.close)
        return routing, pauses

    def test_a_throttled_start_waits_and_routes(self) -> None:
        self.publish(TWO)
        reads = efs_router_ssm.FIRST_READ.attempts
        get_parameter, _ = self.throttled(reads + 2)  # efs_router gives up once, then the app's second look works
        routing, pauses = self.routing_with_pauses()
        with self.assertLogs(level="WARNING") as logs:  # efs_router's and the app's
            files = routing.current()
        self.assertEqual(sum(r.name == "writer" for r in logs.records), 1)
        self.assertIsInstance(files, Router)
        self.assertEqual(len(files.shards), 2)
        self.assertEqual(get_parameter.call_count, reads + 3)
        self.assertEqual(pauses, [self.writer.START_BACKOFF.base])
        self.assertTrue(self.writer.write_reading(files, 7, 100, self.writer.reading(7, 100)))

    def test_a_start_throttled_past_the_last_look_stops_the_app_and_writes_nothing(self) -> None:
        from botocore.exceptions import ClientError

        self.publish(TWO)
        backoff = self.writer.START_BACKOFF
        get_parameter, _ = self.throttled(10 ** 6)
        routing, pauses = self.routing_with_pauses()
        with self.assertLogs(level="WARNING"), self.assertRaises(ClientError) as cm:
            routing.current()
        self.assertEqual(cm.exception.response["Error"]["Code"], "ThrottlingException")
        self.assertEqual(get_parameter.call_count, backoff.attempts * efs_router_ssm.FIRST_READ.attempts)
        self.assertEqual(pauses, [min(backoff.cap, backoff.base * 2 ** k) for k in range(backoff.attempts - 1)])
        self.assertLessEqual(sum(pauses), 60)
        self.assertEqual(files_under(self.base), [])  # never plain paths on a throttled read

    def test_a_throttled_refresh_keeps_the_list_then_takes_the_new_one(self) -> None:
        self.publish(ONE)
        routing, _ = self.routing_with_pauses()
        files = routing.current()
        self.publish(TWO)
        get_parameter, package_pauses = self.throttled(efs_router_ssm.RE_READ.attempts)
        self.clock.now += 60
        with self.assertLogs("efs_router", "WARNING"):
            self.assertTrue(self.writer.write_reading(files, 1, 100, self.writer.reading(1, 100)))
        self.assertEqual(len(files.shards), 1)  # the refresh gave up: still the list it had
        self.assertEqual(len(package_pauses), efs_router_ssm.RE_READ.attempts - 1)
        self.clock.now += 60
        self.assertTrue(self.writer.write_reading(files, 2, 100, self.writer.reading(2, 100)))
        self.assertEqual(len(files.shards), 2)
        self.assertEqual(get_parameter.call_count, efs_router_ssm.RE_READ.attempts + 1)

    def run_writer(self, count: int) -> "subprocess.CompletedProcess[str]":
        env = dict(os.environ, SSM_PARAMETER_NAME=self.name, EFS_MOUNT_PATH=self.base)
        return subprocess.run([sys.executable, str(WRITER), str(count)], env=env, cwd=self.base, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120, check=False)

    def test_the_program_before_and_after_the_list(self) -> None:
        done = self.run_writer(30)
        self.assertEqual(done.returncode, 0, done.stdout)
        self.assertIn("not published yet", done.stdout)
        self.assertIn("30 readings written", done.stdout)
        self.assertEqual(len(files_under(os.path.join(self.base, "data", "analysis"))), 30)
        self.assertFalse(os.path.exists(os.path.join(self.base, ".efs-router-clients")))

        self.publish(TWO)
        before = set(files_under(self.base))
        time.sleep(1.1)  # the program names readings by the second it starts: new names
        done = self.run_writer(200)
        self.assertEqual(done.returncode, 0, done.stdout)
        self.assertIn("routing by the list in %s: 2 shards" % self.name, done.stdout)
        self.assertIn("200 readings written", done.stdout)
        router = Router(MountTargetList.from_json(TWO), Layout.single_mount(self.base))
        new = sorted(set(files_under(self.base)) - before)
        self.assertEqual(len(new), 200, new)
        homes = [router.resolve("data/analysis/" + os.path.basename(rel)) for rel in new]
        self.assertEqual([h.real for h in homes], [os.path.join(self.base, rel) for rel in new])  # each at home
        self.assertEqual({h.index for h in homes}, {0, 1})
        # The reports' directory was made, and the program's report removed at its end.
        self.assertEqual(os.listdir(os.path.join(self.base, ".efs-router-clients")), [])


class Deployment(unittest.TestCase):
    """The task definition and the task role's policy beside the example: what the app needs, in the shapes AWS
    takes."""

    def load(self, name: str) -> Any:
        with open(WRITER.parent / name) as f:
            return json.load(f)

    def test_the_task_definition(self) -> None:
        import botocore.session
        from botocore.validate import ParamValidator

        td = self.load("task-definition.json")
        shape = botocore.session.get_session().get_service_model("ecs").operation_model("RegisterTaskDefinition")
        input_shape = shape.input_shape
        assert input_shape is not None
        report = ParamValidator().validate(td, input_shape)
        self.assertFalse(report.has_errors(), report.generate_report())
        (container,) = td["containerDefinitions"]
        env = {e["name"]: e["value"] for e in container["environment"]}
        writer = load_writer()  # what the app reads, set to its defaults
        self.assertEqual(env, {"SSM_PARAMETER_NAME": writer.DEFAULT_PARAMETER, "EFS_MOUNT_PATH": writer.DEFAULT_MOUNT})
        (mount,) = container["mountPoints"]
        self.assertEqual(mount["containerPath"], env["EFS_MOUNT_PATH"])
        (volume,) = [v for v in td["volumes"] if v["name"] == mount["sourceVolume"]]
        efs = volume["efsVolumeConfiguration"]
        self.assertEqual((efs["rootDirectory"], efs["transitEncryption"]), ("/", "ENABLED"))
        self.assertIn("taskRoleArn", td)

    def test_the_service(self) -> None:
        import botocore.session
        from botocore.validate import ParamValidator

        service = self.load("service.json")
        shape = botocore.session.get_session().get_service_model("ecs").operation_model("CreateService")
        assert shape.input_shape is not None
        report = ParamValidator().validate(service, shape.input_shape)
        self.assertFalse(report.has_errors(), report.generate_report())
        self.assertEqual(service["taskDefinition"], self.load("task-definition.json")["family"])
        # The function forces new deployments only through the rolling-update controller.
        self.assertEqual(service["deploymentController"], {"type": "ECS"})
        self.assertEqual(service["launchType"], "FARGATE")  # platform 1.4.0 and later: EFS, the metadata endpoint
        self.assertEqual(service["deploymentConfiguration"]["deploymentCircuitBreaker"],
                         {"enable": True, "rollback": True})

    def test_images_are_pinned_by_digest(self) -> None:
        """A mutable tag is what a forced deployment pulls anew: the base image and the task's image by digest."""
        dockerfile = (WRITER.parent / "Dockerfile").read_text()
        froms = [line.split()[1] for line in dockerfile.splitlines() if line.upper().startswith("FROM ")]
        self.assertTrue(froms)
        for image in froms:
            self.assertRegex(image, r"^[^@\s]+@sha256:[0-9a-f]{64}$")
        (container,) = self.load("task-definition.json")["containerDefinitions"]
        self.assertRegex(container["image"], r"@sha256:")
        self.assertNotRegex(container["image"].split("@")[0].rsplit("/", 1)[-1], r":")  # no tag beside it
        # The image holds this package's version, and the program the task definition runs.
        version = re.search(r'^version = "([^"]+)"', (WRITER.parents[2] / "clients/python/pyproject.toml")
                            .read_text(), re.M)
        assert version is not None
        self.assertIn('"efs-router[ssm]==%s"' % version.group(1), dockerfile)
        self.assertIn("COPY writer.py /app/writer.py", dockerfile)
        self.assertEqual(container["command"][:2], ["python", "writer.py"])
        self.assertIn("WORKDIR /app", dockerfile)

    def test_the_task_role_policy(self) -> None:
        statements = self.load("task-role-policy.json")["Statement"]
        allowed = {(a, s["Resource"]) for s in statements
                   for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
        fs = "arn:aws:elasticfilesystem:<REGION>:<ACCOUNT_ID>:file-system/<FILE_SYSTEM_ID>"
        self.assertEqual(allowed, {
            ("ssm:GetParameter", "arn:aws:ssm:<REGION>:<ACCOUNT_ID>:parameter/efs-mount-autoscaling/mount-targets"),
            ("elasticfilesystem:ClientMount", fs), ("elasticfilesystem:ClientWrite", fs)})
        self.assertTrue(all(s["Effect"] == "Allow" for s in statements))


if __name__ == "__main__":
    unittest.main()
