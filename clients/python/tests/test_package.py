"""The package as pip installs it."""

import os
import unittest

import efs_router
from helpers import HERE


class Installed(unittest.TestCase):
    def test_the_package_is_the_installed_one(self) -> None:
        # make python-test installs the package (not editable) and runs from outside the
        # repository: an import of the source tree would test what users do not get.
        source = os.path.realpath(os.path.join(HERE, "..", "src"))
        module = os.path.realpath(efs_router.__file__ or "")
        self.assertNotEqual(os.path.commonpath([source, module]), source,
                            "efs_router was imported from the source tree (%s), not the installed package; "
                            "run `make python-test`" % module)

    def test_it_ships_py_typed(self) -> None:
        self.assertTrue(os.path.isfile(os.path.join(os.path.dirname(efs_router.__file__ or ""), "py.typed")))


if __name__ == "__main__":
    unittest.main()
