"""Each hypothesis declares itself in its own module (NAME, DECLARED, evaluate): diagnose's
ranking, the advice the text shows and the incidents each explains are read from there, so a
new hypothesis is one module and one line in HYPOTHESIS_MODULES."""

from __future__ import annotations

import importlib
import inspect

from corescope.investigate import diagnose
from corescope.investigate.diagnosis import Declared
from corescope.investigate.hypotheses import HYPOTHESIS_MODULES, declared
from corescope.render.text import advice_for


def test_every_module_declares_itself_once() -> None:
    mods = [importlib.import_module(m) for m in HYPOTHESIS_MODULES]
    assert [m.NAME for m in mods] == list(declared())
    for m in mods:
        assert m.__name__.rsplit(".", 1)[1] == m.NAME
        assert isinstance(m.DECLARED, Declared) and callable(m.evaluate)
    for primary in (True, False):
        ranks = [d.rank for d in declared().values() if d.primary is primary]
        assert len(ranks) == len(set(ranks)), "two hypotheses share a rank"


def test_diagnose_reads_the_declarations() -> None:
    assert set(diagnose.PRIMARY) | set(diagnose.FALLBACK) == set(declared())
    assert not set(diagnose.PRIMARY) & set(diagnose.FALLBACK)
    ranks = [declared()[n].rank for n in diagnose.PRIMARY]
    assert ranks == sorted(ranks)
    assert {n: d.explains for n, d in declared().items() if d.explains} == diagnose.EXPLAINS


def test_what_a_hypothesis_explains_is_evidence_it_writes() -> None:
    # a declared key the module never sets would count no incident, silently
    for name, d in declared().items():
        src = inspect.getsource(importlib.import_module(
            f"corescope.investigate.hypotheses.{name}"))
        for key in d.explains:
            assert f'"{key}"' in src, f"{name} declares {key} but never writes it"


def test_every_verdict_but_healthy_has_advice() -> None:
    for name in declared():
        assert bool(advice_for(name)) == (name != "healthy"), name
    assert advice_for("undetermined")
    text = advice_for("zombie_memcg_leak").format(culprit="agent", cpu=3)
    assert "agent" in text and "cpu3" in text
