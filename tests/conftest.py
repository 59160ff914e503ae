"""Suite-wide ordering: with one worker per core (tests/run.sh), the tests that train or benchmark for a
minute or more start first, so that none of them is left to run alone at the end while the other
workers idle (xdist's `load` scheduling hands out the rest as workers free up)."""

LONGEST_FIRST = ("tests/test_end_to_end.py", "tests/test_benchmarks.py", "tests/test_r2d2_end_to_end.py")


def pytest_collection_modifyitems(config, items):
    def rank(item):
        path = item.nodeid.split("::", 1)[0]
        return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: the order within each file is kept
