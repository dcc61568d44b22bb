"""Reading the list from SSM, and a router that re-reads it: against a stand-in client with an
injected clock, and against a real moto_server (skipped only when boto3 is not installed)."""

import importlib.util
import os
import sys
import tempfile
import threading
import time
import unittest
from typing import Any, Callable, Dict, List, Optional, Tuple
from unittest import mock

from efs_router import Layout, LayoutError, ListError, MountTargetList, Router, Target
from efs_router import ssm as ssm_module
from helpers import MotoServerCase

NAME = "/efs-mount-autoscaling/mount-targets"
ONE = MountTargetList([Target("fsmt-0", "10.0.0.4", root="/")])
THREE = MountTargetList([Target("fsmt-0", "10.0.0.4", root="/"),
                         Target("fsmt-1", "10.0.1.4", root="/shards/use1-az4"),
                         Target("fsmt-2", "10.0.2.4", root="/shards/use1-az1")])


class FakeSsm:
    """get_parameter as boto3's SSM client answers it; ``fail`` makes it raise."""

    def __init__(self, value: str):
        self.value = value
        self.names: List[str] = []
        self.fail: Optional[Exception] = None
        self.entered: Optional[threading.Event] = None
        self.release: Optional[threading.Event] = None

    def get_parameter(self, *, Name: str) -> Dict[str, Any]:  # Name: boto3's spelling
        self.names.append(Name)
        if self.entered is not None and self.release is not None:
            self.entered.set()
            self.release.wait(10)
        if self.fail is not None:
            raise self.fail
        return {"Parameter": {"Name": Name, "Type": "String", "Value": self.value, "Version": 1}}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def homes(router: Router) -> List[int]:
    return [router.resolve("data/analysis/device-%d.json" % i).index for i in range(60)]


class FromSsm(unittest.TestCase):
    def test_reads_and_parses_the_parameter(self) -> None:
        ssm = FakeSsm(THREE.to_json())
        self.assertEqual(MountTargetList.from_ssm(NAME, ssm), THREE)
        self.assertEqual(ssm.names, [NAME])

    def test_a_value_that_is_not_a_list_is_a_list_error(self) -> None:
        for value in ("not json", '{"targets": []}'):
            with self.subTest(value=value), self.assertRaises(ListError):
                MountTargetList.from_ssm(NAME, FakeSsm(value))

    def test_without_boto3_the_error_says_what_to_install(self) -> None:
        with mock.patch.dict(sys.modules, {"boto3": None}):  # as if not installed
            with self.assertRaises(ImportError) as cm:
                MountTargetList.from_ssm(NAME)
            self.assertIn("ssm", str(cm.exception))
            self.assertIn("boto3", str(cm.exception))
            with self.assertRaises(ImportError):
                Router.from_ssm(NAME, Layout.single_mount("/mnt/efs"))
        # With a client given, boto3 is never imported.
        with mock.patch.dict(sys.modules, {"boto3": None}):
            self.assertEqual(MountTargetList.from_ssm(NAME, FakeSsm(ONE.to_json())), ONE)


class Refresh(unittest.TestCase):
    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.base = self._tmp.name
        self.layout = Layout.single_mount(self.base)
        self.ssm = FakeSsm(ONE.to_json())
        self.clock = Clock()

    def tearDown(self) -> None:
        self._tmp.cleanup()

    def router(self, refresh_seconds: Optional[float] = 60) -> Router:
        return Router.from_ssm(NAME, self.layout, refresh_seconds=refresh_seconds, client=self.ssm, clock=self.clock)

    def test_off_by_default(self) -> None:
        r = Router.from_ssm(NAME, self.layout, client=self.ssm, clock=self.clock)
        self.ssm.value = THREE.to_json()
        self.clock.now += 10 ** 9
        self.assertEqual(set(homes(r)), {0})
        self.assertEqual(len(self.ssm.names), 1)
        self.assertEqual(r.list, ONE)

    def test_re_reads_once_the_period_has_passed(self) -> None:
        r = self.router()
        self.assertEqual(len(self.ssm.names), 1)
        self.ssm.value = THREE.to_json()
        self.clock.now += 59.9
        self.assertEqual(set(homes(r)), {0})
        self.assertEqual(len(self.ssm.names), 1)
        self.clock.now += 0.1
        self.assertEqual(set(homes(r)), {0, 1, 2})  # the first operation re-read, the others did not
        self.assertEqual(len(self.ssm.names), 2)
        self.assertEqual(r.list, THREE)
        self.assertEqual(self.ssm.names, [NAME, NAME])
        self.clock.now += 59
        homes(r)
        self.assertEqual(len(self.ssm.names), 2)

    def test_every_operation_re_reads_when_due(self) -> None:
        r = self.router(refresh_seconds=0)  # 0: every operation
        p = "data/analysis/device-1.json"
        operations: List[Callable[[], object]] = [
            lambda: r.resolve(p), lambda: r.locate(p), lambda: r.exists(p), lambda: r.write(p, b"x"),
            lambda: r.read_with_fallback(p),
        ]
        for i, operation in enumerate(operations):
            operation()
            self.assertEqual(len(self.ssm.names), 2 + i)

    def test_a_failed_re_read_keeps_the_list_and_warns(self) -> None:
        r = self.router()
        before = homes(r)
        self.ssm.fail = ConnectionError("could not connect to the endpoint")
        self.clock.now += 61
        with self.assertLogs("efs_router", "WARNING") as logs:
            self.assertEqual(homes(r), before)
            r.write("data/analysis/device-1.json", b"x")
            self.assertEqual(r.read_with_fallback("data/analysis/device-1.json").data, b"x")
        self.assertEqual(len(logs.records), 1, logs.output)
        self.assertIn("SSM parameter %s" % NAME, logs.output[0])
        self.assertIn("could not connect to the endpoint", logs.output[0])
        self.assertEqual(len(self.ssm.names), 2)  # the next attempt waits a period, too
        self.assertEqual(r.list, ONE)
        self.ssm.fail = None
        self.ssm.value = THREE.to_json()
        self.clock.now += 60
        self.assertEqual(set(homes(r)), {0, 1, 2})

    def test_an_invalid_list_is_not_taken(self) -> None:
        r = self.router()
        for value in ("not json", '{"mount_targets":[{"id":"a","ip":"1","root":"../x"}]}', ""):
            self.ssm.value = value
            self.clock.now += 60
            with self.subTest(value=value), self.assertLogs("efs_router", "WARNING") as logs:
                self.assertEqual(set(homes(r)), {0})
            self.assertIn("ListError", logs.output[0])
        self.assertEqual(r.list, ONE)

    def test_a_list_that_does_not_fit_the_layout_is_not_taken(self) -> None:
        self.layout = Layout.per_target([self.base])
        r = self.router()
        self.ssm.value = THREE.to_json()  # three targets, one mount
        self.clock.now += 60
        with self.assertLogs("efs_router", "WARNING") as logs:
            self.assertEqual(set(homes(r)), {0})
        self.assertIn("LayoutError", logs.output[0])

    def test_any_exception_of_a_re_read_leaves_the_operation_alone(self) -> None:
        r = self.router()
        self.ssm.fail = KeyError("Parameter")  # an answer without the expected shape
        self.clock.now += 60
        with self.assertLogs("efs_router", "WARNING") as logs:
            r.write("a", b"x")
        self.assertIn("KeyError", logs.output[0])
        self.assertEqual(r.read_with_fallback("a").data, b"x")

    def test_the_first_read_is_not_caught(self) -> None:
        self.ssm.value = "not json"
        with self.assertRaises(ListError):
            self.router()
        self.ssm.fail = ConnectionError("down")
        with self.assertRaises(ConnectionError):
            self.router()

    def test_threads_wait_for_one_re_read(self) -> None:
        r = self.router()
        self.ssm.value = THREE.to_json()
        self.ssm.entered, self.ssm.release = threading.Event(), threading.Event()
        self.clock.now += 60
        results: List[List[int]] = []
        threads = [threading.Thread(target=lambda: results.append(homes(r))) for _ in range(6)]
        for t in threads:
            t.start()
        self.assertTrue(self.ssm.entered.wait(10))
        time.sleep(0.05)
        self.assertEqual(results, [])  # nobody routes by the old list once the period is over
        self.ssm.release.set()
        for t in threads:
            t.join(10)
        self.assertEqual(len(self.ssm.names), 2)
        self.assertEqual(len(results), 6)
        self.assertTrue(all(set(h) == {0, 1, 2} for h in results))

    def test_settings_are_checked(self) -> None:
        for bad in (-1, float("nan"), float("inf")):
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                self.router(refresh_seconds=bad)
        with self.assertRaises(ValueError):
            Router(ONE, self.layout, refresh_seconds=60)  # nothing to re-read from
        reload_calls: List[int] = []

        def reload() -> MountTargetList:
            reload_calls.append(1)
            return THREE

        r = Router(ONE, self.layout, reload=reload, refresh_seconds=5, clock=self.clock)
        self.clock.now += 5
        self.assertEqual(set(homes(r)), {0, 1, 2})
        self.assertEqual(len(reload_calls), 1)

    def test_the_list_can_be_replaced_by_hand(self) -> None:
        r = Router(ONE, Layout.per_target([self.base]))
        with self.assertRaises(LayoutError):
            r.list = THREE
        self.assertEqual(r.list, ONE)
        r = Router(ONE, self.layout)
        r.list = THREE
        self.assertEqual(set(homes(r)), {0, 1, 2})


class AwsError(Exception):
    """What boto3 raises for an AWS error, as far as the package reads it: ``response["Error"]["Code"]``."""

    def __init__(self, code: str) -> None:
        super().__init__("An error occurred (%s) when calling the GetParameter operation" % code)
        self.response = {"Error": {"Code": code, "Message": "Rate exceeded"}}


class ThrottledSsm(FakeSsm):
    """get_parameter that raises each of ``errors`` once, in order, before it answers."""

    def __init__(self, value: str, errors: List[str]) -> None:
        super().__init__(value)
        self.errors = list(errors)

    def get_parameter(self, *, Name: str) -> Dict[str, Any]:  # Name: boto3's spelling
        if self.errors:
            self.names.append(Name)
            raise AwsError(self.errors.pop(0))
        return super().get_parameter(Name=Name)


class ThrottledReads(unittest.TestCase):
    """Parameter Store throttles GetParameter (40 per second per account and Region by default): a read is tried
    again with exponential, jittered pauses, a bounded number of times; the pauses here are recorded, not slept,
    and each is drawn at its bound."""

    def setUp(self) -> None:
        self.pauses: List[float] = []
        for name, value in (("_sleep", self.pauses.append), ("_draw", lambda low, high: high)):
            patcher = mock.patch.object(ssm_module, name, value)
            patcher.start()
            self.addCleanup(patcher.stop)
        self._tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self._tmp.cleanup)
        self.layout = Layout.single_mount(self._tmp.name)
        self.clock = Clock()

    def test_a_throttled_first_read_is_tried_again_with_growing_pauses(self) -> None:
        ssm = ThrottledSsm(THREE.to_json(), ["ThrottlingException", "TooManyUpdates", "InternalServerError"])
        with self.assertLogs("efs_router", "WARNING") as logs:
            r = Router.from_ssm(NAME, self.layout, client=ssm, report=False)
        self.assertEqual(r.list, THREE)
        self.assertEqual(len(ssm.names), 4)
        self.assertEqual(self.pauses, [0.5, 1.0, 2.0])
        self.assertEqual(len(logs.records), 3)

    def test_the_pauses_are_capped_and_the_reads_bounded(self) -> None:
        backoff = ssm_module.FIRST_READ
        ssm = ThrottledSsm(ONE.to_json(), ["ThrottlingException"] * 10)
        with self.assertLogs("efs_router", "WARNING"), self.assertRaises(AwsError) as cm:
            MountTargetList.from_ssm(NAME, ssm)
        self.assertEqual(ssm_module.error_code(cm.exception), "ThrottlingException")
        self.assertEqual(len(ssm.names), backoff.attempts)
        self.assertEqual(self.pauses, [min(backoff.cap, backoff.base * 2 ** k) for k in range(backoff.attempts - 1)])
        self.assertEqual(max(self.pauses), backoff.cap)

    def test_the_pause_is_drawn_between_zero_and_its_bound(self) -> None:
        draws: List[Tuple[float, float]] = []

        def draw(low: float, high: float) -> float:
            draws.append((low, high))
            return low

        backoff = ssm_module.Backoff(attempts=4, base=0.5, cap=1.5)
        self.assertEqual([backoff.pause(k, draw) for k in range(3)], [0.0, 0.0, 0.0])
        self.assertEqual(draws, [(0.0, 0.5), (0.0, 1.0), (0.0, 1.5)])

    def test_other_errors_are_raised_at_once(self) -> None:
        for code in ("ParameterNotFound", "AccessDeniedException", "ValidationException"):
            with self.subTest(code=code):
                ssm = ThrottledSsm(ONE.to_json(), [code])
                with self.assertRaises(AwsError):
                    MountTargetList.from_ssm(NAME, ssm)
                self.assertEqual(len(ssm.names), 1)
        unreachable = FakeSsm(ONE.to_json())
        unreachable.fail = ConnectionError("no code: not an AWS answer")
        with self.assertRaises(ConnectionError):
            MountTargetList.from_ssm(NAME, unreachable)
        self.assertEqual((len(unreachable.names), self.pauses), (1, []))

    def test_a_throttled_re_read_is_tried_again_briefly(self) -> None:
        ssm = ThrottledSsm(ONE.to_json(), [])
        r = Router.from_ssm(NAME, self.layout, refresh_seconds=60, client=ssm, clock=self.clock, report=False)
        ssm.value = THREE.to_json()
        ssm.errors = ["ThrottlingException", "ThrottlingException"]
        self.clock.now += 60
        with self.assertLogs("efs_router", "WARNING"):
            self.assertEqual(set(homes(r)), {0, 1, 2})  # taken on the third read of the same refresh
        self.assertEqual(self.pauses, [0.1, 0.2])
        self.assertEqual(r.list, THREE)

    def test_a_re_read_throttled_past_its_attempts_keeps_the_list(self) -> None:
        ssm = ThrottledSsm(ONE.to_json(), [])
        r = Router.from_ssm(NAME, self.layout, refresh_seconds=60, client=ssm, clock=self.clock, report=False)
        ssm.value = THREE.to_json()
        ssm.errors = ["ThrottlingException"] * ssm_module.RE_READ.attempts
        self.clock.now += 60
        with self.assertLogs("efs_router", "WARNING") as logs:
            self.assertEqual(set(homes(r)), {0})
        self.assertEqual(len(ssm.names), 1 + ssm_module.RE_READ.attempts)
        self.assertEqual(self.pauses, [0.1, 0.2])  # at most 0.3 s holds the router's operations meanwhile
        self.assertIn("re-reading", logs.output[-1])
        self.assertEqual(r.list, ONE)


# In CI a test that cannot run fails (boto3 missing is then an ImportError), never skips.
@unittest.skipIf(importlib.util.find_spec("boto3") is None and not os.environ.get("CI"),
                 "boto3 is not installed: install the package with its 'ssm' extra to test reading SSM")
class AgainstMotoServer(MotoServerCase):
    def setUp(self) -> None:
        super().setUp()
        self.name = "%s/%s" % (NAME, self.id().rsplit(".", 1)[-1])
        self._tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self._tmp.cleanup)

    def put(self, value: str) -> None:
        self.ssm.put_parameter(Name=self.name, Value=value, Type="String", Overwrite=True)

    def test_from_ssm_reads_the_published_list(self) -> None:
        self.put(THREE.to_json())
        self.assertEqual(MountTargetList.from_ssm(self.name, self.ssm), THREE)

    def test_from_ssm_makes_its_client_when_given_none(self) -> None:
        self.put(ONE.to_json())
        self.assertEqual(MountTargetList.from_ssm(self.name), ONE)  # boto3.client("ssm"), the endpoint from env

    def test_a_missing_parameter_is_the_client_error(self) -> None:
        from botocore.exceptions import ClientError

        with self.assertRaises(ClientError) as cm:
            MountTargetList.from_ssm(self.name + "/none", self.ssm)
        self.assertEqual(cm.exception.response["Error"]["Code"], "ParameterNotFound")

    def test_a_router_refreshes_from_ssm(self) -> None:
        self.put(ONE.to_json())
        clock = Clock()
        r = Router.from_ssm(self.name, Layout.single_mount(self._tmp.name), refresh_seconds=30, client=self.ssm,
                            clock=clock)
        self.assertEqual(set(homes(r)), {0})
        self.put(THREE.to_json())
        self.assertEqual(set(homes(r)), {0})  # not yet due
        clock.now += 30
        self.assertEqual(set(homes(r)), {0, 1, 2})
        self.ssm.delete_parameter(Name=self.name)
        clock.now += 30
        with self.assertLogs("efs_router", "WARNING") as logs:
            self.assertEqual(set(homes(r)), {0, 1, 2})
        self.assertIn("ParameterNotFound", logs.output[0])
        self.assertEqual(r.list, THREE)

    def test_a_router_makes_its_client_when_given_none(self) -> None:
        self.put(THREE.to_json())
        r = Router.from_ssm(self.name, Layout.single_mount(self._tmp.name))
        self.assertEqual(r.list, THREE)


if __name__ == "__main__":
    unittest.main()
