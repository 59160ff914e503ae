import pytest

from seed.auth import read_auth_token


def test_token_comes_from_the_file_before_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("SEED_TEST_TOKEN", "from-env")
    path = tmp_path / "token"
    path.write_text("from-file\n")
    assert read_auth_token("SEED_TEST_TOKEN", str(path)) == "from-file"
    assert read_auth_token("SEED_TEST_TOKEN", None) == "from-env"
    monkeypatch.delenv("SEED_TEST_TOKEN")
    assert read_auth_token("SEED_TEST_TOKEN", None) == ""


def test_missing_or_empty_token_file_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="cannot read auth token file"):
        read_auth_token("X", str(tmp_path / "nope"))
    (tmp_path / "empty").write_text("  \n")
    with pytest.raises(ValueError, match="is empty"):
        read_auth_token("X", str(tmp_path / "empty"))
