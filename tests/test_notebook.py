"""hilbert in IPython (hilbert/notebook.py, hilbert/display.py): `%%hilbert` cells driven
through a real InteractiveShell, redefinition, errors that point into the cell without a Python
traceback, `%hilbert plan`, and the HTML of plans, functions, modules, models, paths and errors
(their content: steps, FLOPs, weights, the error's code and marked span)."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from html import unescape

import numpy as np
import pytest

import hilbert
from hilbert import display, progress

IPython = pytest.importorskip("IPython")

from IPython.core.interactiveshell import InteractiveShell  # noqa: E402
from IPython.utils.capture import capture_output  # noqa: E402

DENSE = 'fn f(x, w) ↦ tanh(einsum("np,pq->nq", x, w))\n'
SCALER = """model Scaler(n, seed) : Learner {
  weight w : Tensor[n] from gaussian(seed)
  def eval(x) ≔ FACTOR · w · x
}
"""


@pytest.fixture(scope="module")
def ipython(tmp_path_factory):
    """One real IPython shell for the module (no history file), hilbert's extension loaded;
    calls stay on the host tier (what is tested is the notebook side, not generated code)."""
    import warnings

    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings():
        patch.setenv("IPYTHONDIR", str(tmp_path_factory.mktemp("ipython")))
        patch.setenv("HILBERT_COMPILE", "never")
        # the shell makes its namespace sys.modules["__main__"]: given back afterwards, since
        # what runs next in this process (a spawned worker, a pickle) looks there
        patch.setitem(sys.modules, "__main__", sys.modules["__main__"])
        from traitlets.config import Config

        config = Config()
        config.HistoryManager.enabled = False
        shell = InteractiveShell.instance(config=config)
        shell.run_cell("%load_ext hilbert")
        yield shell
        InteractiveShell.clear_instance()


@pytest.fixture
def shell(ipython):
    """The shell with an empty namespace."""
    ipython.reset(new_session=False)
    return ipython


def run(shell, cell: str):
    """Run `cell` as a notebook would (numbered), returning its result and captured output."""
    with capture_output() as captured:
        result = shell.run_cell(cell, store_history=True)
    return result, captured


def html_of(captured) -> str:
    return "".join(o.data.get("text/html", "") for o in captured.outputs)


def test_import_hilbert_does_not_import_ipython():
    code = "import sys, hilbert; print('IPython' in sys.modules, 'hilbert.notebook' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_cell_binds_functions_and_models(shell):
    result, _ = run(shell, "%%hilbert\n" + DENSE + SCALER.replace("FACTOR", "1"))
    assert result.success, result.error_in_exec
    x, w = np.arange(6.0).reshape(2, 3) / 10, np.ones((3, 2)) / 3
    np.testing.assert_allclose(shell.user_ns["f"](x, w), np.tanh(x @ w))
    net = shell.user_ns["Scaler"](3, 7)
    np.testing.assert_allclose(net.eval(np.arange(3.0)), net.w * np.arange(3.0))


def test_cell_as_binds_a_module_only(shell):
    result, _ = run(shell, "%%hilbert --as layers\n" + DENSE)
    assert result.success, result.error_in_exec
    assert isinstance(shell.user_ns["layers"], hilbert.Module)
    assert "f" not in shell.user_ns
    assert shell.user_ns["layers"].f([[1.0]], [[0.5]]) == pytest.approx(np.tanh(0.5))


def test_cell_opens_a_module_of_the_working_folder(shell, tmp_path, monkeypatch):
    (tmp_path / "Halves.hb").write_text("fn half(x) ↦ x / 2\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result, _ = run(shell, "%%hilbert\nopen Halves\nfn quarter(x) ↦ half(half(x))\n")
    assert result.success, result.error_in_exec
    assert shell.user_ns["quarter"](8.0) == 2.0


def test_rerunning_an_edited_cell_replaces_definitions(shell):
    run(shell, "%%hilbert\nfn g(x) ↦ 2 · x\n" + SCALER.replace("FACTOR", "1"))
    old_net = shell.user_ns["Scaler"](3, 7)
    result, _ = run(shell, "%%hilbert\nfn g(x) ↦ 3 · x\n" + SCALER.replace("FACTOR", "10"))
    assert result.success, result.error_in_exec
    assert shell.user_ns["g"](1.0) == 3.0
    new_net = shell.user_ns["Scaler"](3, 7)
    x = np.arange(3.0)
    np.testing.assert_allclose(new_net.eval(x), 10 * new_net.w * x)
    np.testing.assert_allclose(old_net.eval(x), old_net.w * x)  # the old class still works
    assert type(old_net) is not type(new_net)


def test_error_points_at_the_cells_own_line_without_a_traceback(shell):
    result, captured = run(shell, "%%hilbert\nfn ok(x) ↦ x\nfn g(x) ↦\n   x + yy\n")
    err = result.error_in_exec
    assert isinstance(err, hilbert.NameResolutionError) and err.code == "E200"
    # the %%hilbert line is the cell's line 1, so `yy` is on line 4, column 8
    assert (err.span.source.name, err.span.line, err.span.column) == (
        f"<cell {result.execution_count}>", 4, 8)
    assert "Traceback" not in captured.stdout and ".py" not in captured.stdout
    assert f"error[E200] at <cell {result.execution_count}>:4:8" in captured.stdout
    page = html_of(captured)
    assert 'href="docs/errors/E200.md"' in page and "unknown name yy" in page
    marked = re.findall(r"<mark[^>]*>(.*?)</mark>", page)
    assert [unescape(re.sub("<[^>]+>", "", m)) for m in marked] == ["yy"]
    assert ">4<" in page.replace("\n", "<")  # the line number beside the excerpt


def test_error_in_a_terminal_is_hilberts_text(shell, monkeypatch):
    # a terminal IPython shows text only: the excerpt with its caret, no HTML, no traceback
    monkeypatch.setattr(shell.display_formatter, "active_types", ["text/plain"])
    result, captured = run(shell, "%%hilbert\nfn g(x) ↦ x + yy\n")
    assert result.error_in_exec.code == "E200" and not captured.outputs
    number = result.execution_count
    assert captured.stdout.splitlines() == [
        f"NameResolutionError: <cell {number}>:2:15: error[E200]: unknown name yy",
        "  fn g(x) ↦ x + yy", "                ^^"]


def test_error_in_a_call_from_python_has_no_traceback(shell):
    run(shell, "%%hilbert\n" + DENSE)
    result, captured = run(shell, "f([[1.0, 2.0]], [[1.0]])")
    assert isinstance(result.error_in_exec, hilbert.HilbertError)
    assert result.error_in_exec.code == "E305"
    assert "Traceback" not in captured.stdout and "error[E305]" in captured.stdout


def test_error_html_escapes_the_source(shell):
    result, captured = run(shell, "%%hilbert\nfn f(x) ↦ x <script>\n")
    assert result.error_in_exec.code == "E100"
    page = html_of(captured)
    assert "<script" not in page
    assert "x <script>" in unescape(re.sub("<[^>]+>", "", page))  # shown, as text


def test_magic_line_errors_point_at_the_word(shell):
    result, captured = run(shell, "%%hilbert --as 9lives\nfn f(x) ↦ x\n")
    err = result.error_in_exec
    assert err.code == "E600" and (err.span.source.name, err.span.column) == ("%%hilbert", 16)
    result, _ = run(shell, "%%hilbert --nope 1\nfn f(x) ↦ x\n")
    assert result.error_in_exec.code == "E600" and "--nope" in result.error_in_exec.message
    result, _ = run(shell, "%hilbert plan missing x=4x3")
    assert result.error_in_exec.span.column == 15  # the column in the cell
    run(shell, "%%hilbert\n" + DENSE)
    result, _ = run(shell, "%hilbert plan f x=4y3 w=3x2")
    assert result.error_in_exec.code == "E600" and result.error_in_exec.span.column == 17
    result, _ = run(shell, "%hilbert plan f x=4x3 w=3x2 --dtype")
    assert result.error_in_exec.code == "E600" and result.error_in_exec.span.column == 36
    result, _ = run(shell, "%hilbert show f")
    assert result.error_in_exec.code == "E600" and "plan" in result.error_in_exec.message


def test_plan_magic_shows_the_steps_and_flops(shell):
    run(shell, "%%hilbert\n" + DENSE)
    result, captured = run(shell, "%hilbert plan f x=4x3 w=3x2")
    plan = result.result
    assert isinstance(plan, hilbert.compiler.plan.Plan) and plan.signature == ((4, 3), (3, 2))
    assert plan == shell.user_ns["f"].plan((4, 3), (3, 2))
    assert run(shell, "%hilbert plan f 4x3 3x2")[0].result == plan
    n, p, q = 4, 3, 2
    flops = 2 * n * p * q  # a multiply and an add per term (opt_einsum's count)
    page = shell.display_formatter.format(plan)[0]["text/html"]
    cells = [unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", page)]
    assert cells[:5] == ["1", "pq,np->nq", str(flops), f"{n * q} el", "GEMM"]
    assert "nest" in cells and "tanh" in cells  # the fused nest of the schedule
    assert "plan of f(x: 4×3, w: 3×2)" in unescape(page)
    plain = shell.display_formatter.format(plan)[0]["text/plain"]
    assert plain == str(plan)


def test_reprs_html_and_plain(shell):
    run(shell, "%%hilbert --as mod\n" + DENSE + SCALER.replace("FACTOR", "1"))
    module = shell.user_ns["mod"]
    f, net = module.f, module.Scaler(3, 7)
    assert repr(f) == "<hilbert fn f(x, w) at <cell " + repr(f).split("<cell ")[1]
    assert repr(module).startswith("<hilbert module <cell ") and repr(module).endswith(
        ": f, Scaler>")
    page = unescape(f._repr_html_())
    assert "f(x, w)" in page and "tier not called yet" in page and "einsum" in page
    f(np.ones((2, 3)), np.ones((3, 2)))
    assert "tier host" in unescape(f._repr_html_())
    rows = re.findall(r"<td[^>]*>(.*?)</td>", module._repr_html_())
    assert rows == ["f", "fn", "x, w", "Scaler", "model", "n, seed"]
    page = net._repr_html_()
    assert re.findall(r"<td[^>]*>(.*?)</td>", page) == ["w", "3", "float64"]
    assert "Scaler(n=3, seed=7)" in page and "3 parameters" in page
    assert repr(net) == "<Scaler(n=3, seed=7): w 3>"


def test_contract_path_html():
    _, info = hilbert.contract_path("ij,jk,kl->il", (2, 3), (3, 4), (4, 5), shapes=True)
    page = unescape(info._repr_html_())
    rows = re.findall(r"<tr><td[^>]*>(\d)</td><td[^>]*>([^<]*)</td><td[^>]*>(\d+)</td>", page)
    assert [int(flops) for _, _, flops in rows] == [s[1] for s in _opt_einsum_flops(info)]
    assert "peak memory about" in page


def _opt_einsum_flops(info):
    """Each step's FLOPs as opt_einsum counts them (its own path, the same as hilbert's)."""
    import opt_einsum

    arrays = [np.empty(s) for s in info.shapes]
    _, theirs = opt_einsum.contract_path(info.eq, *arrays, optimize=info.path)
    found = []
    for step in theirs.contraction_list:
        inputs, output = step[2].split("->")
        sizes = theirs.size_dict
        indices = set(inputs.replace(",", ""))
        summed = len(indices - set(output)) > 0
        found.append((step[2], opt_einsum.helpers.flop_count(indices, summed, 2, sizes)))
    return found


def test_docs_page_of_every_linked_code_exists():
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    for code in hilbert.grammar.errors.CODES:
        assert (root / display.ERROR_DOCS.format(code=code)).is_file(), code


def test_extension_without_ipython_says_what_to_install(monkeypatch):
    for name in ("IPython", "IPython.core.magic", "IPython.display"):
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, "hilbert.notebook", raising=False)
    with pytest.raises(ImportError, match=r"hilbert\[notebook\]"):
        hilbert.load_ipython_extension(None)
    monkeypatch.delitem(sys.modules, "hilbert.notebook", raising=False)


class KernelStream:
    """Stands for a Jupyter kernel's output stream (ipykernel's OutStream), recording text."""

    def __init__(self):
        self.written: list[str] = []

    def write(self, text):
        self.written.append(text)

    def flush(self):
        pass

    def isatty(self):
        return False


KernelStream.__module__ = "ipykernel.iostream"


def test_progress_draws_in_a_notebook(monkeypatch):
    monkeypatch.delenv("HILBERT_PROGRESS", raising=False)
    stream = KernelStream()
    assert progress.drawn(stream) and not progress.drawn(open_devnull())
    monkeypatch.setattr(progress, "TRAIN_BAR_DELAY_S", 0.0)
    chunks: list[int] = []
    progress.run_in_chunks(5, chunks.append, "Model.train", stream=stream)
    assert sum(chunks) == 5 and len(chunks) > 1  # chunked, so a bar could move
    assert "Model.train" in "".join(stream.written)
    monkeypatch.setenv("HILBERT_PROGRESS", "0")
    assert not progress.drawn(stream)


def open_devnull():
    import io

    return io.StringIO()


# -- the example notebook, on a real kernel ----------------------------------------------------

#: The seed's verified outputs of its Networks examples (six decimals), in the notebook's order;
#: the sharpened critic's loss is the seed's figure in words, −2 ln σ(2) = 0.2539.
VERIFIED = [
    ("dense", [[1, 2, 3], [3, 4, 7]]),
    ("layerNorm", [[-1.224736, 0, 1.224736], [-0.707107, -0.707107, 1.414214]]),
    ("attention", [[1.635825], [2], [2.364175]]),
    ("causal", [[1], [1.731059], [2.364175]]),
    ("dropped", [[0, 4], [6, 0]]),
    ("convolve", [[-1, -1, -1, 4]]),
    ("maxPool", [[5, 5, 4, 4]]),
    ("t = 0", [[0.3], [0.7], [1.1], [1.5]]),
    ("t = 500", [[1], [3], [5], [7]]),
    ("query x=4", [[9]]),
    ("recurrent", [[0.179726]]),
    ("t = 0", [[0.18, 0.24], [0.36, 0.48], [-0.18, -0.24]]),
    ("t = 300", [[1, 1], [2, 2], [-1, -1]]),
    ("zero weights", 1.386294),
    ("sharp weights", 0.2539),
]


def executed(name: str, tmp_path):
    """examples/NAME run top to bottom on a real kernel (nbclient), in examples/, calls on the
    host tier (what is checked is values, not builds): its code cells' outputs, in order. The
    kernel is this interpreter's (a kernel spec of its own, so a `python3` spec elsewhere on
    the machine cannot run another Python without this checkout's hilbert)."""
    import json
    import os
    from pathlib import Path

    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    spec = tmp_path / "kernels" / "hilbert-tests"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "hilbert tests", "language": "python"}), encoding="utf-8")
    examples = Path(__file__).resolve().parent.parent / "examples"
    book = nbformat.read(examples / name, as_version=4)
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(os.environ, "HILBERT_COMPILE", "never")  # (the kernel inherits it)
        patch.setitem(os.environ, "JUPYTER_PATH", str(tmp_path))
        nbclient.NotebookClient(book, kernel_name="hilbert-tests", timeout=120,
                                resources={"metadata": {"path": str(examples)}}).execute()
    return [o for c in book.cells if c.cell_type == "code" for o in c.outputs]


def printed(outputs) -> list[list[str]]:
    """The `name = value` lines the cells printed, as [name, value] (the stream's pieces joined
    first: the kernel may send one line in two messages)."""
    text = "".join(o.text for o in outputs if o.output_type == "stream" and o.name == "stdout")
    return [line.rsplit(" = ", 1) for line in text.splitlines()]


@pytest.mark.timeout(300)
def test_networks_notebook_runs_on_a_kernel_and_prints_the_seeds_figures(tmp_path):
    import json

    outputs = executed("networks.ipynb", tmp_path)
    lines = printed(outputs)
    assert [label for label, _ in lines] == [label for label, _ in VERIFIED]
    for (label, text), (_, figure) in zip(lines, VERIFIED, strict=True):
        np.testing.assert_allclose(json.loads(text), figure, atol=5e-5 if label == "sharp weights"
                                   else 1e-6, err_msg=label)
    plan, drawing = [o for o in outputs if o.output_type == "execute_result"]
    assert drawing.data["image/png"].startswith("iVBORw0KGgo")  # a PNG, base64
    cells = [unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", plan.data["text/html"])]
    assert cells[:5] == ["1", "pq,np->nq", str(2 * 64 * 2 * 3), f"{64 * 3} el", "GEMM"]
    error = next(o for o in outputs if o.output_type == "error")  # the last cell's, on purpose
    assert error.ename == "NameResolutionError" and len(error.traceback) == 1
    assert "error[E200]" in error.traceback[0] and ":4:27" in error.traceback[0]
    shown = next(o for o in outputs if o.output_type == "display_data").data["text/html"]
    assert re.findall(r"<mark[^>]*>(.*?)</mark>", shown) == ["ww"] and "E200.md" in shown


#: The course seed's printed numbers (/work/shared/seeds/002_…, as examples/course.py lists
#: them) and the decimals it printed, in examples/course.ipynb's order; None where the seed
#: printed nothing (a value the notebook shows for contrast).
COURSE = [
    ("dL/dW1", [[0.896, 0.0], [0.448, 0.0]], 4), ("dL/db1", [0.448, 0.0], 4),
    ("dL/dW2", [[0.756], [0.0]], 4), ("dL/db2", [0.56], 4),
    ("parameters", 26122, 0), ("logits shape", [64, 10], 0),
    ("f", 11.6521, 4), ("df/dx1", 5.5, 4), ("df/dx2", 1.7163, 4),
    ("sigmoid'", [0.0452, 0.2500, 0.1966, 0.1050, 0.0066], 4),
    ("tanh'", [0.0099, 1.0000, 0.4200, 0.0707, 0.0002], 4),
    ("relu'", [0.0, 0.0, 1.0, 1.0, 1.0], 4),
    ("gelu'", [-0.0119, 0.5000, 1.0833, 1.0852, 1.0000], 4),
    ("silu'", [-0.0881, 0.5000, 0.9277, 1.0908, 1.0265], 4),
    ("GELU minimum", -0.170, 3), ("GELU minimum at z", -0.752, 3),
    ("SiLU minimum", -0.278, 3), ("SiLU minimum at z", -1.278, 3),
    ("GELU tanh gap", 4.7e-4, 5), ("GELU tanh gap at |z|", 2.7, 1),
    ("softmax by hand", [[math.nan] * 3], 4), ("softmaxRows", None, 4),
    ("cross-entropy from logits", 0.407606, 6),
    ("ln softmax of [0, -800]", [[0.0, -math.inf]], 4),
    ("logSoftmax of [0, -120]", [[0.0, -120.0]], 4), ("BCE with logits, z = 17", 17.0, 1),
    ("Huber cost of 3", 2.5, 4), ("half the square of 3", 4.5, 4),
    ("variance from deviations", 0.6667, 4),
    ("train out", [-1.342, -0.447, 0.447, 1.342], 3), ("running mean", 0.5, 3),
    ("running var", 1.567, 3), ("eval out for 6", 4.394, 3),
    ("correction at t = 1", 3.16, 2), ("correction peak", 6.57, 2),
    ("correction peak at step", 12, 0), ("correction at t = 1000", 1.26, 2),
    ("beta2 0.95: correction at t = 1", 0.45, 2), ("beta2 0.95: never above", 1.10, 2),
    ("spike v", 11.0, 1), ("spike sqrt v", 3.3, 1), ("spike m", 10.9, 1),
    ("spike step", 3, 0), ("steps back within 10%", 3860, -1),
    ("momentum gain, flipping", 0.53, 2), ("momentum gain, constant", 10, 0),
]


@pytest.mark.timeout(300)
def test_course_notebook_runs_on_a_kernel_and_agrees_with_the_seed(tmp_path):
    import json

    outputs = executed("course.ipynb", tmp_path)
    lines = printed(outputs)
    assert [label for label, _ in lines] == [label for label, _, _ in COURSE]
    for (label, text), (_, seed, decimals) in zip(lines, COURSE, strict=True):
        if seed is None:
            continue
        ours, seed = np.asarray(json.loads(text), dtype=float), np.asarray(seed, dtype=float)
        # agreement as the seed printed it: equal once rounded to its decimals
        assert ours.shape == seed.shape, label
        with np.errstate(invalid="ignore"):  # (−∞ − −∞ is NaN: equal, caught by ==)
            same = (ours == seed) | (np.abs(ours - seed) <= 10.0 ** -decimals / 2 + 1e-12) | (
                np.isnan(ours) & np.isnan(seed))
        assert same.all(), (label, ours, seed)
    model = next(o for o in outputs if o.output_type == "execute_result").data["text/html"]
    rows = re.findall(r"<tr><td[^>]*>(\w+)</td><td[^>]*>([^<]*)</td>", model)
    assert rows == [("w1", "64×128"), ("b1", "128"), ("w2", "128×128"), ("b2", "128"),
                    ("w3", "128×10"), ("b3", "10")]
