"""The committed generated modules must match protos/seed.proto."""

import pytest

from seed import protogen


def test_generated_modules_match_the_proto(tmp_path):
    pytest.importorskip("grpc_tools", reason="grpcio-tools is part of the test extra")
    protogen.generate(tmp_path)
    for name in protogen.GENERATED:
        committed = (protogen.PACKAGE_DIR / name).read_text()
        assert (tmp_path / name).read_text() == committed, (
            f"seed/{name} is stale: run `python -m seed.protogen` and commit the result")
