"""The examples in the package's docstrings run and print what they say."""

import doctest

import numpy as np

import segcut


def test_docstring_examples(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = doctest.testmod(
        segcut,
        extraglobs={"segcut": segcut, "np": np},
        optionflags=doctest.NORMALIZE_WHITESPACE,
        report=True,
    )
    assert res.attempted > 40
    assert res.failed == 0
