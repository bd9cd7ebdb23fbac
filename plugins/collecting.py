"""Where the suite is, and collecting it whatever the form of ``--model``: a helper of the options plugin (no hooks
of its own)."""

from __future__ import annotations

from pathlib import Path

import pytest

_CHECKOUT_SUITE = Path(__file__).resolve().parent.parent / "tests_longctx"
# installed, the suite ships inside the plugins' package (pyproject.toml: ctxgate_plugins.suite)
SUITE_DIR = _CHECKOUT_SUITE if _CHECKOUT_SUITE.is_dir() else Path(__file__).resolve().parent / "suite"


def collect_the_suite(config: pytest.Config) -> None:
    """Collect the suite, whatever the form of ``--model`` and wherever pytest was started.

    pytest picks its rootdir before plugins can declare options, so it reads the value of ``--model /abs/ckpt`` as
    a test path (pytest-dev/pytest#8846): the rootdir becomes the checkpoint's folder, the project's ini file is
    not read, and pytest would collect the working directory. When the user named no test paths and no ini file
    named any, the suite is what runs."""
    if config.args_source != pytest.Config.ArgsSource.INVOCATION_DIR:
        return  # test paths on the command line, or the ini file's testpaths: the user chose
    if not SUITE_DIR.is_dir():
        raise pytest.UsageError(
            f"the ctxgate suite is not at {SUITE_DIR}: the installation is incomplete; reinstall ctxgate "
            "(pip install --force-reinstall ctxgate), or name the suite's folder: "
            "pytest tests_longctx --model path/to/ckpt"
        )
    config.args[:] = [str(SUITE_DIR)]
