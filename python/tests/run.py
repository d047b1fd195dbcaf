"""Run the package's tests (unittest) and write JUnit XML for .ci/run's count.

usage: python run.py OUT.xml [PATTERN]   (with the venv's interpreter: it tests the installed galloc)

PATTERN picks the test files (default test_*.py): .ci/install_test runs
test_torch113_*.py alone again in the venv that sees Debian's torch.

Exits 0 only if every test passed or was skipped and at least one ran.
"""
import sys
import time
import unittest
import xml.etree.ElementTree as ET
from os.path import abspath, dirname

HERE = dirname(abspath(__file__))


class Recording(unittest.TextTestResult):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.cases = []  # (test, outcome, detail, seconds)

    def startTest(self, test):
        self._t0 = time.monotonic()
        super().startTest(test)

    def _add(self, test, outcome, detail=""):
        self.cases.append((test, outcome, detail, time.monotonic() - getattr(self, "_t0", time.monotonic())))

    def addSuccess(self, test):
        super().addSuccess(test)
        self._add(test, "passed")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._add(test, "failure", self._exc_info_to_string(err, test))

    def addError(self, test, err):
        super().addError(test, err)
        self._add(test, "error", self._exc_info_to_string(err, test))

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._add(test, "skipped", reason)

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._add(test, "passed")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._add(test, "failure", "unexpected success")


def main():
    out = sys.argv[1]
    pattern = sys.argv[2] if len(sys.argv) > 2 else "test_*.py"
    suite = unittest.defaultTestLoader.discover(HERE, pattern=pattern, top_level_dir=HERE)
    result = unittest.TextTestRunner(resultclass=Recording, verbosity=2, stream=sys.stderr).run(suite)
    root = ET.Element("testsuites")
    ts = ET.SubElement(root, "testsuite", name="python", tests=str(len(result.cases)),
                       failures=str(sum(c[1] == "failure" for c in result.cases)),
                       errors=str(sum(c[1] == "error" for c in result.cases)),
                       skipped=str(sum(c[1] == "skipped" for c in result.cases)))
    for test, outcome, detail, seconds in result.cases:
        cls, _, name = test.id().rpartition(".")
        tc = ET.SubElement(ts, "testcase", classname=cls, name=name, time=f"{seconds:.3f}")
        if outcome in ("failure", "error", "skipped"):
            ET.SubElement(tc, outcome, message=detail.strip().splitlines()[-1] if detail.strip() else outcome).text = detail
    ET.ElementTree(root).write(out, encoding="utf-8", xml_declaration=True)
    if result.testsRun == 0:
        print("run.py: no test ran", file=sys.stderr)
        return 1
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
