"""Which laws a module sees: its own (declared at the top level or in a law-only model, in
order, each checked before use) and, after them, those of every module it opens; and the
rewriting of a definition's body by them."""

from __future__ import annotations

from ...grammar import syntax as s
from ...grammar.errors import NameResolutionError
from .check import check_law
from .rewrite import Rule, rewrite, rules


def own_laws(module: s.Module) -> tuple[s.Law, ...]:
    """The laws `module` declares, in order, each checked (E120, E121); E205 for a law name
    declared twice."""
    laws: list[s.Law] = []
    for decl in module.decls:
        if isinstance(decl, s.Law):
            laws.append(decl)
        elif isinstance(decl, s.LawModel):
            laws.extend(decl.laws)
    seen: dict[str, s.Law] = {}
    for law in laws:
        if law.name in seen:
            raise NameResolutionError("E205", f"law {law.name} is declared twice in this module "
                                      f"(first at {seen[law.name].span})", law.span)
        seen[law.name] = law
        check_law(law)
    return tuple(laws)


def visible(own: tuple[s.Law, ...], opened: list[tuple[s.Law, ...]]) -> tuple[s.Law, ...]:
    """A module's own laws, then each opened module's (each law once)."""
    found: dict[int, s.Law] = {id(law): law for law in own}
    for laws in opened:
        for law in laws:
            found.setdefault(id(law), law)
    return tuple(found.values())


def simplified(body: s.Expr, laws: tuple[Rule, ...]) -> tuple[s.Expr, tuple[str, ...]]:
    """A definition's body with the laws applied, shapes kept, and the names of those that
    fired (each once, in the order they first fired)."""
    if not laws:
        return body, ()
    steps: list[str] = []
    after = rewrite(body, laws, False, steps, keep_shapes=True)
    return after, tuple(dict.fromkeys(steps))


__all__ = ["own_laws", "rules", "simplified", "visible"]
