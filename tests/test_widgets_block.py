"""The depth widget recomputes headlessly when a control changes."""

import pytest

from transformer_nb.widgets.block import DepthWidget

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def test_depth_widget_controls():
    w = DepthWidget(depth=12, placement="Post-LN")
    w.refresh()
    assert w.fig is not None and len(w.last["grad"]) == 12 and len(w.last["diversity"]) == 13
    assert w.last["ratio"] > 1  # Post-LN: larger gradients near the output
    w.controls["placement"].value = "Pre-LN"
    assert w.last["norm_first"] and w.last["ratio"] < 1
    w.controls["residual"].value = False
    assert not w.last["residual"] and w.last["diversity"][-1] < 1e-4
    w.controls["depth"].value = 4
    assert len(w.last["grad"]) == 4 and len(w.last["rms"]) == 5
    w.controls["d_model"].value = 32
    assert w.last["d_model"] == 32 and w.fig is not None
