"""pytest options of meshrt's test suite."""


def pytest_addoption(parser):
    parser.addoption(
        "--fuzz-long", action="store_const", const=100_000, default=None,
        help="tests/test_fuzz_readers.py: 100,000 mutated inputs per reader instead of the few hundred of a "
             "normal run (MESHRT_FUZZ_LONG=N sets another count)",
    )


def pytest_configure(config):
    """Compiled kernels go to a cache folder of this test session (removed at its end), not the user's:
    every run compiles what it uses, as on a new machine, and leaves nothing behind."""
    import os
    import tempfile

    # The suite evaluates hundreds of distinct one-off expressions: fused from their first run, each would
    # compile a kernel (0.3-1 s), minutes of CI. The tests of fusion set meshrt.tensor.lazy.HOT themselves.
    os.environ.setdefault("MESHRT_FUSE_AFTER", "2")
    if "MESHRT_TEST_CACHE" not in os.environ:
        os.environ["MESHRT_TEST_CACHE"] = os.environ["MESHRT_CACHE_DIR"] = tempfile.mkdtemp(prefix="meshrt-test-cache-")
        os.environ.pop("MESHRT_FUSE_CACHE", None)
        config._meshrt_cache = os.environ["MESHRT_CACHE_DIR"]


def pytest_unconfigure(config):
    import shutil

    path = getattr(config, "_meshrt_cache", None)
    if path:
        shutil.rmtree(path, ignore_errors=True)
