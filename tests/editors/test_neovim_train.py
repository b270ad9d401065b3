""":FuseTrain in a real, headless Neovim (helpers of test_neovim.py): the backend
from the server's "Train on ..." actions, progress (step and loss) in the message
area, and the loss curve and table in the result buffer."""
from __future__ import annotations

import numpy as np
import pytest

from .test_neovim import run_nvim, write

REGRESSION = """\
X[n,j] = "x.npy"
T[n] = "t.npy"
param W[j], B
Y[n] = W[j] X[n,j] + B
L avg= (Y[n] - T[n])^2
train L
export Y
"""

COLLECT_PROGRESS = """
        local progress = {}
        vim.api.nvim_create_autocmd('User', { pattern = 'FuseTrainProgress',
          callback = function(ev) progress[#progress + 1] = ev.data end })
"""


def _program(tmp_path):
    file = write(tmp_path, "reg.fuse", REGRESSION)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 3))
    np.save(file.parent / "x.npy", x)
    np.save(file.parent / "t.npy", x @ np.array([1.0, -2.0, 0.5]) + 0.3)
    return file


def test_fuse_train_shows_progress_and_the_loss_curve(tmp_path):
    pytest.importorskip("torch")
    file = _program(tmp_path)
    data = run_nvim(tmp_path, file, COLLECT_PROGRESS + """
        wait_client()
        local done = wait_user('FuseTrainDone')
        vim.cmd('FuseTrain steps=1500 lr=0.05 batch=n=16 seed=2')
        local ev = done()
        out.result = ev.result
        out.lines = lines(ev.buf)
        out.name = vim.api.nvim_buf_get_name(ev.buf)
        out.progress = progress
        out.complete = vim.fn.getcompletion('FuseTrain ', 'cmdline')
    """)
    assert "error" not in data, data
    result = data["result"]
    assert result["ok"] is True and result["backend"] == "torch"  # from the server's actions
    assert result["steps"] == 1500 and result["options"]["batch"] == {"n": 16}
    history = result["history"]  # 1000 of the 1500 steps, evenly spread
    assert len(history) == 1000 and history[0]["step"] == 1 and history[-1]["step"] == 1500
    assert result["final_loss"] < 0.05 * result["initial_loss"]
    text = "\n".join(data["lines"])
    assert data["lines"][0].startswith("# Trained reg.fuse on cpu (torch): L ")
    assert "- on cpu (torch), steps 0 to 1500; optimizer adam, lr 0.05" in text
    assert "## Loss curve\n\n```\nloss █" in text
    assert "    step          loss    validation       time" in text
    assert "### W\n\n- shape `(3,)`" in text or "### W\n- shape `(3,)`" in text
    assert data["name"] == "fuse://train/reg.fuse"
    kinds = [p.get("kind") for p in data["progress"]]
    assert kinds[0] == "begin" and kinds[-1] == "end"
    steps = [p["message"] for p in data["progress"]
             if p.get("kind") == "report" and str(p.get("message", "")).startswith("step ")]
    assert steps and all("/1500: loss " in m for m in steps), data["progress"]
    assert "backend=torch" in data["complete"] and "steps=" in data["complete"]


def test_fuse_train_on_numpy_is_refused_in_words(tmp_path):
    file = _program(tmp_path)
    data = run_nvim(tmp_path, file, """
        wait_client()
        local done = wait_user('FuseTrainDone')
        vim.cmd('FuseTrain backend=numpy')
        local ev = done()
        out.lines = lines(ev.buf)
        local ok, problem = pcall(vim.cmd, 'FuseTrain steps')  -- an error message, no request
        out.bad = { ok = ok, problem = tostring(problem) }
    """)
    assert "error" not in data, data
    assert data["lines"][0] == "# Fuse training failed"
    assert "training needs gradients, which the numpy backend does not compute" in \
        "\n".join(data["lines"])
    assert data["bad"]["ok"] is False
    assert ":FuseTrain takes key=value words" in data["bad"]["problem"]
