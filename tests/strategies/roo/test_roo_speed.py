"""The shortcuts that keep Roo Code's strategy cheap per request (``harpe_lab.strategies.roo``)
send what the plain way sends: Roo keeps each file's outline from one condense to the next, and
its turn's mark of the files read is a copy made only when the turn reads one: a file read again,
or taken back by an aborted turn, is folded with the content it holds now.
"""

from __future__ import annotations

from harpe_lab.messages import ToolCall, Usage
from harpe_lab.strategies import roo
from tests._support.builders import call, reply, results, user
from tests._support.editing import SYSTEM
from tests.strategies._agents import COUNTER, Distiller

FILE_A = "\n".join(["def alpha(x):", "    y = x", "    z = y", "    return z", ""])
FILE_B = "\n".join(["class Beta:", "    a = 1", "    b = 2", "    c = 3", ""])


def _roo_ctx(distill, allowed: int = 1_000):
    config = roo.Condense(window=10_000, max_tokens=9_000 - allowed)
    return config.context(SYSTEM, counter=COUNTER, distill=distill)


def _read(ctx, call_id: str, path: str, content: str, usage: int) -> None:
    ctx.observe(Usage(input_tokens=usage))
    ctx.append(reply("", ToolCall(call_id, "Read", {"file_path": path})))
    ctx.append(results((call_id, content)))


def _summary_text(out) -> str:
    (message,) = out.rendered.messages
    return message.text


class TestRooFoldsTheFilesItReadAsTheyAreNow:
    def test_a_file_read_again_is_folded_with_its_new_content(self):
        ctx = _roo_ctx(Distiller("s1", "s2"))
        ctx.begin_turn(user("task"))
        ctx.compact()
        _read(ctx, "c1", "a.py", FILE_A, usage=2_000)
        first = ctx.compact()
        assert first.compacted and _summary_text(first) == roo.summary_text("s1", "", roo.folded_files(
            [("a.py", FILE_A)]))
        _read(ctx, "c2", "a.py", FILE_B, usage=2_000)
        second = ctx.compact()
        assert second.compacted and _summary_text(second) == roo.summary_text("s2", "", roo.folded_files(
            [("a.py", FILE_B)]))
        assert "alpha" not in _summary_text(second)

    def test_an_aborted_turn_takes_its_reads_back(self):
        for outcome, folded in [("abort", FILE_A), ("commit", FILE_B)]:
            ctx = _roo_ctx(Distiller("s"))
            ctx.begin_turn(user("task"))
            ctx.compact()
            _read(ctx, "c1", "a.py", FILE_A, usage=10)
            ctx.compact()
            _read(ctx, "c2", "b.py", FILE_B, usage=10)
            ctx.compact()
            ctx.observe(Usage(input_tokens=10))
            ctx.append(reply("read"))
            ctx.commit_turn()
            ctx.begin_turn(user("again"))
            ctx.compact()
            _read(ctx, "c3", "a.py", FILE_B, usage=10)
            assert not ctx.compact().compacted
            if outcome == "abort":
                ctx.abort_turn()
            else:
                ctx.observe(Usage(input_tokens=10))
                ctx.append(reply("read again"))
                ctx.commit_turn()
            ctx.begin_turn(user("go on"))
            ctx.compact()
            ctx.observe(Usage(input_tokens=2_000))
            ctx.append(reply("", call("c4")))
            ctx.append(results(("c4", "ok")))
            out = ctx.compact()
            # most recently read first: a.py last read in the turn kept, else b.py was
            order = [("b.py", FILE_B), ("a.py", FILE_A)] if outcome == "abort" else [("a.py", folded), ("b.py", FILE_B)]
            assert out.compacted and _summary_text(out) == roo.summary_text("s", "", roo.folded_files(order)), outcome

    def test_a_file_is_outlined_once_for_every_condense_that_folds_it(self, monkeypatch):
        outlined: list[str] = []
        real = roo.outline

        def counting(content: str) -> str:
            outlined.append(content)
            return real(content)

        monkeypatch.setattr(roo, "outline", counting)
        ctx = _roo_ctx(Distiller("s"))
        ctx.begin_turn(user("task"))
        ctx.compact()
        _read(ctx, "c1", "a.py", FILE_A, usage=2_000)
        assert ctx.compact().compacted
        for k in range(3):
            ctx.observe(Usage(input_tokens=2_000))
            ctx.append(reply("", call(f"x{k}")))
            ctx.append(results((f"x{k}", "ok")))
            out = ctx.compact()
            assert out.compacted and "## File Context: a.py" in _summary_text(out)
        assert outlined == [FILE_A]
