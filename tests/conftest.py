"""pytest options of meshrt's test suite."""


def pytest_addoption(parser):
    parser.addoption(
        "--fuzz-long", action="store_const", const=100_000, default=None,
        help="tests/test_fuzz_readers.py: 100,000 mutated inputs per reader instead of the few hundred of a "
             "normal run (MESHRT_FUZZ_LONG=N sets another count)",
    )
