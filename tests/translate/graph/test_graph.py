"""GraphBuilder (translate/graph/builder.py): what running ops on fake tensors shows the user.

An op that raises on its fake inputs becomes a graph break where it raises as eagerly; FakeTensorMode
also logs a traceback at ERROR level before raising, which must not reach the user's stderr.
"""
import logging
import warnings

import pytest
import torch

import framejit


def add_float_to_int(i):
    i.add_(torch.ones(3) * 0.5)          # eager: RuntimeError (in-place int += float)
    return i


def test_an_op_raising_on_fake_tensors_raises_as_eager_and_logs_nothing(capfd, caplog):
    with pytest.raises(RuntimeError) as eager:
        add_float_to_int(torch.arange(3))
    capfd.readouterr()
    with caplog.at_level(logging.DEBUG, logger="torch"), warnings.catch_warnings():
        warnings.simplefilter("ignore")           # the graph-break warning
        with pytest.raises(RuntimeError) as compiled:
            framejit.compile(add_float_to_int)(torch.arange(3))
    assert str(compiled.value) == str(eager.value)
    err = capfd.readouterr().err
    assert "failed while attempting to run meta" not in err
    assert not [r for r in caplog.records if "failed while attempting to run meta" in r.getMessage()]
