import pytest


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    # lets fixtures see whether the test body failed (the browser test saves a screenshot then)
    rep = yield
    setattr(item, f"rep_{rep.when}", rep)
    return rep
