"""pytest options of meshrt's test suite."""


def pytest_addoption(parser):
    parser.addoption(
        "--fuzz-long", action="store", nargs="?", type=int, const=100_000, default=None, metavar="N",
        help="tests/test_fuzz_readers.py: N mutated inputs per reader (default 100000; "
             "or set MESHRT_FUZZ_LONG=N) instead of the few hundred of a normal run",
    )
