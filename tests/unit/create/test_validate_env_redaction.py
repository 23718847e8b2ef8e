"""What a validation container was handed in its environment never reaches the model's
repair feedback: its output is redacted of those values (``container_output``)."""

from __future__ import annotations

from tsukud.validation.validator import container_output


def test_an_environment_value_echoed_by_the_container_is_redacted() -> None:
    env = {
        "PATH": "/opt/tsuku/bin:/usr/bin",
        "HOME": "/tmp",
        "TSUKU_VALIDATION": "1",
        "NPM_CONFIG_TOKEN": "plain-lowercase-value-with-no-secret-shape",
    }
    echoed = (
        "npm ERR! 401 Unauthorized with token plain-lowercase-value-with-no-secret-shape\n"
        "PATH=/opt/tsuku/bin:/usr/bin HOME=/tmp TSUKU_VALIDATION=1"
    )
    out = container_output(echoed, env)
    assert "plain-lowercase-value-with-no-secret-shape" not in out
    assert "npm ERR! 401 Unauthorized" in out  # the rest is the model's to read
    # The values this stage sets itself say nothing secret and stay readable.
    assert "PATH=/opt/tsuku/bin:/usr/bin HOME=/tmp TSUKU_VALIDATION=1" in out
