"""The API reference tells the truth about arguments and fitted attributes.

1. Every name in a docstring's "Args:" is a parameter, and a function (method, class
   ``__init__``) that has an "Args:" section documents all of its parameters. Read statically
   from the source, as mkdocstrings reads it for docs/reference, so no module is imported:
   the Keras modules are checked without importing Keras (5-10 s). The public API is every
   name in ``__all__`` of ``crowd_keras``, of its packages, of ``integrations``
   (``crowd_keras.integrations``) and of every module docs/reference renders. No entry is
   run into another's text, and "Attributes:" sections render as written (one name per
   entry, no type carried over from an earlier entry: :func:`attributes_section_problems`).
2. The label models of the registry, fitted on a tiny crowd, have every ``name_`` their
   "Attributes:" sections document, and document every public ``name_`` that ``fit`` sets.
   Only LIA imports Keras (once a process; the rest of this file takes about 2 s).
"""
from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set, Tuple

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]

# Sections whose entries name parameters (Google style, as mkdocstrings reads them).
ARG_SECTIONS = ("Args", "Arguments", "Parameters", "Params", "Keyword Args",
                "Keyword Arguments", "Other Parameters")
SECTION = re.compile(r"^(?P<indent>\s*)(?P<title>[A-Z][A-Za-z ]*):\s*$")
# "name: text", "name (type): text", "a, b: text", "*args: text"
ENTRY = re.compile(r"^(?P<names>\*{0,2}\w+(?:\s*,\s*\*{0,2}\w+)*)\s*(?:\((?P<type>[^)]*)\))?\s*"
                   r":(?:\s|$)")
SKIPPED = {"self", "cls"}
UNPARSED = "<not an entry>"   # a section line at entry indentation that names nothing

# Objects that cannot follow the rule, each with its reason. Empty: nothing is grandfathered.
EXEMPT: Dict[str, str] = {}


def module_file(module: str) -> Path:
    """The source file of a dotted module name (``crowd_keras.integrations`` is integrations/)."""
    parts = module.split(".")
    if parts[:2] == ["crowd_keras", "integrations"]:
        parts = ["integrations"] + parts[2:]
    base = ROOT.joinpath(*parts)
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


_TREES: Dict[str, ast.Module] = {}


def tree(module: str) -> ast.Module:
    if module not in _TREES:
        _TREES[module] = ast.parse(module_file(module).read_text(encoding="utf-8"))
    return _TREES[module]


def dunder_all(module: str) -> List[str]:
    for node in tree(module).body:
        if (isinstance(node, (ast.Assign, ast.AnnAssign))
                and any(getattr(t, "id", None) == "__all__" for t in
                        (node.targets if isinstance(node, ast.Assign) else [node.target]))):
            return list(ast.literal_eval(node.value))
    return []


def absolute(module: str, node: ast.ImportFrom) -> str:
    """The module an ``from X import`` in ``module`` reads from."""
    if not node.level:
        return node.module or ""
    package = module.split(".") if module_file(module).name == "__init__.py" else \
        module.split(".")[:-1]
    package = package[:len(package) - node.level + 1]
    return ".".join(package + ([node.module] if node.module else []))


def resolve(module: str, name: str, depth: int = 0) -> Optional[Tuple[str, ast.AST]]:
    """The (module, definition) of ``name`` as seen from ``module``, following imports."""
    if depth > 10:
        return None
    for node in tree(module).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                and node.name == name:
            return module, node
    for node in ast.walk(tree(module)):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    source = absolute(module, node)
                    if not source.startswith(("crowd_keras", "integrations")):
                        return None
                    if source.startswith("integrations"):
                        source = "crowd_keras." + source
                    if module_file(source).exists():
                        return resolve(source, alias.name, depth + 1)
    lazy = lazy_exports(module).get(name)   # a package's ``__getattr__`` imports it
    if lazy is not None:
        return resolve(lazy, name, depth + 1)
    return None   # a constant, or something from another package


def lazy_exports(module: str) -> Dict[str, str]:
    """name -> module of a package's ``_LAZY`` table (names imported on first use)."""
    for node in tree(module).body:
        if (isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Dict)
                and any(getattr(t, "id", None) == "_LAZY" for t in
                        (node.targets if isinstance(node, ast.Assign) else [node.target]))):
            table = ast.literal_eval(node.value)
            return {k: v if v.startswith("crowd_keras") else f"{module}.{v}"
                    for k, v in table.items()}
    return {}


def reference_targets() -> Iterator[str]:
    """What docs/reference renders: ``::: dotted.path`` lines."""
    for page in sorted((ROOT / "docs" / "reference").glob("*.md")):
        for line in page.read_text(encoding="utf-8").splitlines():
            if line.startswith("::: "):
                target = line[4:].strip()
                yield "crowd_keras." + target if target.startswith("integrations") else target


def public_modules() -> List[str]:
    modules = ["crowd_keras"]
    for init in sorted((ROOT / "crowd_keras").rglob("__init__.py")):
        modules.append(".".join(init.parent.relative_to(ROOT).parts))
    for init in sorted((ROOT / "integrations").rglob("__init__.py")):
        modules.append(".".join(("crowd_keras",) + init.parent.relative_to(ROOT).parts))
    for target in reference_targets():
        if module_file(target).exists() and target not in modules:
            modules.append(target)
    return modules


def public_objects() -> Dict[Tuple[str, str], ast.AST]:
    """(defining module, name) -> definition, for every public function and class."""
    found: Dict[Tuple[str, str], ast.AST] = {}
    wanted = [(m, n) for m in public_modules() for n in dunder_all(m)]
    for target in reference_targets():
        if not module_file(target).exists():   # an object: module.Name
            module, _, name = target.rpartition(".")
            wanted.append((module, name))
    for module, name in wanted:
        hit = resolve(module, name)
        if hit is not None:
            found[(hit[0], hit[1].name)] = hit[1]
    return found


def decorators(node: ast.AST) -> Set[str]:
    names = set()
    for dec in getattr(node, "decorator_list", []):
        dec = dec.func if isinstance(dec, ast.Call) else dec
        names.add(dec.attr if isinstance(dec, ast.Attribute) else getattr(dec, "id", ""))
    return names


def parameters(func: ast.FunctionDef) -> Tuple[List[str], Set[str]]:
    """(named parameters but self/cls, the names of *args/**kwargs)."""
    a = func.args
    named = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]
    if named and named[0] in SKIPPED and "staticmethod" not in decorators(func):
        named = named[1:]
    star = {p.arg for p in (a.vararg, a.kwarg) if p is not None}
    return named, star


def section_items(doc: Optional[str], titles=ARG_SECTIONS
                  ) -> Optional[List[Tuple[List[str], str, Optional[str]]]]:
    """``(names, text, type)`` of each entry of the docstring's sections ``titles`` (type: of
    ``name (type): text``, else None); None if it has none. An entry may document several
    names (``a, b: text``)."""
    if not doc:
        return None
    lines = doc.expandtabs().splitlines()
    items: Optional[List[Tuple[List[str], str, Optional[str]]]] = None
    i = 0
    while i < len(lines):
        head = SECTION.match(lines[i])
        if not head or head["title"] not in titles:
            i += 1
            continue
        items = items if items is not None else []
        outer = len(head["indent"])
        entry_indent = None
        i += 1
        while i < len(lines):
            line = lines[i]
            if not line.strip():
                i += 1
                continue
            indent = len(line) - len(line.lstrip())
            if indent <= outer:
                break
            if entry_indent is None:
                entry_indent = indent
            if indent == entry_indent:
                match = ENTRY.match(line.strip())
                items.append(([n.strip().lstrip("*") for n in match["names"].split(",")],
                              line.strip()[match.end():], match["type"]) if match
                             else ([UNPARSED], line.strip(), None))
            else:
                names, text, kind = items[-1]
                items[-1] = (names, text + " " + line.strip(), kind)
            i += 1
    return items


def section_entries(doc: Optional[str], titles=ARG_SECTIONS) -> Optional[List[str]]:
    """The names documented in the docstring's sections ``titles``; None if it has none."""
    items = section_items(doc, titles)
    return None if items is None else [n for names, _, _ in items for n in names]


# a second entry run into the text of the first: "a: text. b: text" (rendered as a's text)
PACKED = re.compile(r"[.;]\s+\**(\w+)(?:\s*\([^)]*\))?:\s")


def packed_names(doc: Optional[str], known: Set[str], titles=ARG_SECTIONS) -> List[str]:
    """Names of ``known`` that the sections ``titles`` document inside another entry."""
    return [m[1] for _, text, _ in section_items(doc, titles) or []
            for m in PACKED.finditer(text) if m[1] in known]


def class_bases(module: str, cls: ast.ClassDef) -> Iterator[Tuple[str, ast.ClassDef]]:
    """The classes ``cls`` derives from, depth first, where they are in this repository."""
    for base in cls.bases:
        name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", None)
        hit = resolve(module, name) if name else None
        if hit and isinstance(hit[1], ast.ClassDef):
            yield hit
            yield from class_bases(*hit)


def class_methods(module: str, cls: ast.ClassDef) -> Dict[str, Tuple[str, ast.FunctionDef]]:
    """name -> (module, method): the class's own, then inherited ones not overridden."""
    methods: Dict[str, Tuple[str, ast.FunctionDef]] = {}
    for owner_module, owner in [(module, cls)] + list(class_bases(module, cls)):
        for node in owner.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                methods.setdefault(node.name, (owner_module, node))
    return methods


def dataclass_fields(module: str, cls: ast.ClassDef) -> Optional[List[str]]:
    """The ``__init__`` parameters of a dataclass or NamedTuple; None for other classes."""
    chain = [(module, cls)] + list(class_bases(module, cls))
    named_tuple = any(getattr(b, "id", getattr(b, "attr", "")) == "NamedTuple"
                      for _, c in chain for b in c.bases)
    if not (named_tuple or any("dataclass" in decorators(c) for _, c in chain)):
        return None
    fields: List[str] = []
    for _, owner in reversed(chain):
        for node in owner.body:
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                if "ClassVar" in ast.unparse(node.annotation):
                    continue
                value = node.value
                if (isinstance(value, ast.Call) and ast.unparse(value.func).endswith("field")
                        and any(k.arg == "init" and getattr(k.value, "value", True) is False
                                for k in value.keywords)):
                    continue
                if node.target.id not in fields:
                    fields.append(node.target.id)
    return fields


def check(label: str, docs: List[Optional[str]], named: List[str], star: Set[str],
          problems: List[str]) -> None:
    """The Args sections of ``docs`` (a class's and its ``__init__``'s together) against the
    parameters ``named`` and ``star`` (``*args``, ``**kwargs``)."""
    found = [section_entries(doc) for doc in docs]
    if all(names is None for names in found):
        return
    documented = [n for names in found for n in names or []]
    for name in documented:
        if name == UNPARSED:
            problems.append(f"{label}: an Args line at entry indentation names no parameter")
        elif name not in named and name not in star:
            problems.append(f"{label}: documents {name!r}, which is not a parameter")
    for name in named:
        if name not in documented:
            problems.append(f"{label}: parameter {name!r} is not in its Args section")
    for doc in docs:
        for name in packed_names(doc, set(named) | star):
            problems.append(f"{label}: {name!r} is documented inside another Args entry")


def known_members(module: str, cls: ast.ClassDef) -> Dict[str, Optional[str]]:
    """name -> annotation (or None) of the members mkdocstrings' griffe finds on a class: its
    and its bases' class-level names, methods and properties (their return annotation), and
    the ``self.name`` that ``__init__`` assigns."""
    found: Dict[str, Optional[str]] = {}
    for _, owner in reversed([(module, cls)] + list(class_bases(module, cls))):
        for node in owner.body:
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                found[node.target.id] = ast.unparse(node.annotation)
            elif isinstance(node, ast.Assign):
                found.update((t.id, None) for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found[node.name] = ast.unparse(node.returns) if node.returns else None
                if node.name != "__init__":
                    continue
                for sub in ast.walk(node):
                    targets = [sub.target] if isinstance(sub, ast.AnnAssign) else \
                        sub.targets if isinstance(sub, ast.Assign) else []
                    for target in targets:
                        for t in target.elts if isinstance(target, ast.Tuple) else [target]:
                            if isinstance(t, ast.Attribute) and \
                                    getattr(t.value, "id", None) == "self":
                                found[t.attr] = ast.unparse(sub.annotation) \
                                    if isinstance(sub, ast.AnnAssign) else found.get(t.attr)
    return found


def attributes_section_problems(label: str, module: str, cls: ast.ClassDef) -> List[str]:
    """How mkdocstrings would misrender the class's "Attributes:" section. Its Google parser
    (griffe 2.4) reads one name per entry (``a, b: text`` becomes attribute ``a,`` of type
    ``b``) and, for a name that is not a member it finds (a fitted ``name_`` set by ``fit``),
    shows the type of the previous entry: after ``posteriors_`` (annotated ``np.ndarray`` on
    ``LabelModel``) every fitted attribute would read ``ndarray``. So entries that name
    annotated members come after the others (or give their type, ``name (type): text``)."""
    problems = []
    known = known_members(module, cls)
    shown: Optional[str] = None      # the type griffe carries to the next entry
    for names, text, kind in section_items(ast.get_docstring(cls), ("Attributes",)) or []:
        if names == [UNPARSED]:
            problems.append(f"{label}: an Attributes line at entry indentation names "
                            f"nothing: {text[:60]!r}")
            continue
        if len(names) > 1:
            problems.append(f"{label}: the Attributes entry {', '.join(names)!r} names several "
                            "attributes (rendered as one attribute of a made-up type)")
            shown = "?"
            continue
        if kind is not None:          # given: shown, and carried on
            shown = kind
        elif names[0] in known:
            shown = known[names[0]]
        elif shown is not None:
            problems.append(f"{label}: attribute {names[0]!r} would be rendered with the type "
                            f"{shown!r} of an earlier entry")
        for m in PACKED.finditer(text):
            if m[1] in known or m[1].endswith("_"):
                problems.append(f"{label}: attribute {m[1]!r} is documented inside "
                                "another Attributes entry")
    return problems


def docstring_problems() -> Tuple[List[str], int]:
    """(problems, number of functions, methods and __init__s checked)."""
    problems: List[str] = []
    seen: Set[Tuple[str, int]] = set()
    checked = 0
    for (module, name), node in sorted(public_objects().items()):
        label = f"{module}.{name}"
        if label in EXEMPT:
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            checked += 1
            check(label, [ast.get_docstring(node)], *parameters(node), problems)
            continue
        methods = class_methods(module, node)
        fields = dataclass_fields(module, node)
        if "__init__" in methods:
            named, star = parameters(methods["__init__"][1])
            init_doc = ast.get_docstring(methods["__init__"][1])
        elif fields is not None:
            named, star, init_doc = fields, set(), None
        else:
            named, star, init_doc = [], set(), None
        # the class docstring documents __init__ (mkdocstrings merges them)
        checked += 1
        check(f"{label}.__init__", [ast.get_docstring(node), init_doc], named, star, problems)
        problems += attributes_section_problems(label, module, node)
        for method_name, (owner_module, method) in sorted(methods.items()):
            if method_name.startswith("_") or (owner_module, method.lineno) in seen:
                continue
            if "property" in decorators(method) or f"{label}.{method_name}" in EXEMPT:
                continue
            seen.add((owner_module, method.lineno))
            checked += 1
            check(f"{label}.{method_name}", [ast.get_docstring(method)], *parameters(method),
                  problems)
    return problems, checked


def test_the_public_api_is_found():
    objects = public_objects()
    names = {name for _, name in objects}
    # spot checks: a re-export, a Keras layer, an integration, a dataclass, a module page
    assert {"Annotations", "DawidSkene", "CrowdLayer", "CrowdLabelModel", "read_export",
            "SimulatedCrowd", "consensus_quality", "viterbi"} <= names
    assert len(objects) > 200


def test_the_parser_reads_google_sections():
    doc = """Summary.

    Args:
        a, b: two at once,
            continued: not an entry.
        c (int): typed.
        **kwargs: passed on.

    Returns:
        x: not an argument.
    """
    assert section_entries(doc) == ["a", "b", "c", "kwargs"]
    assert section_entries("No sections.") is None
    assert section_entries(doc, ("Returns",)) == ["x"]


def test_the_check_finds_each_kind_of_drift():
    doc = """Summary.

    Args:
        a: first. b: run into a's text.
        gone: no such parameter.
        ``c``: not an entry.
    """
    problems: List[str] = []
    check("f", [doc], ["a", "b", "d"], {"kwargs"}, problems)
    assert problems == ["f: documents 'gone', which is not a parameter",
                        "f: an Args line at entry indentation names no parameter",
                        "f: parameter 'b' is not in its Args section",
                        "f: parameter 'd' is not in its Args section",
                        "f: 'b' is documented inside another Args entry"]
    problems = []
    check("g", ["No Args section: nothing is required."], ["a"], set(), problems)
    assert problems == []


def test_every_args_entry_is_a_parameter_and_every_parameter_is_documented():
    problems, checked = docstring_problems()
    assert checked > 500
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)


def test_exemptions_name_public_objects_and_say_why():
    public = {f"{m}.{n}" for (m, n) in public_objects()}
    for label, reason in EXEMPT.items():
        owner = label if label in public else label.rpartition(".")[0]
        assert owner in public, label
        assert len(reason) >= 20, label


# ---------------------------------------------------------------- fitted attributes
# The label models' "Attributes:" sections against a fit on a tiny crowd: every documented
# ``name_`` exists after ``fit`` (gold and a classifier's pred_probs given to the models that
# take them), and every public ``name_`` that ``fit`` sets is documented, on the model's class
# or a base class (``LabelModel`` documents the attributes the models share).

# Documented attributes that only some models, or some fits, set ("Class.name": when).
# ``LabelModel``'s section documents what the models share, some of it for some of them.
CONDITIONAL = {
    "LabelModel.item_log_prior_": "set by the models that take gold or pred_probs",
    "LabelModel.n_classes_": "set by the models that run the EM-step protocol",
    "LabelModel.vote_shares_": "set by the models that run the EM-step protocol",
    "LabelModel.n_iter_": "set by the models fitted by an iterative algorithm (not voting)",
    "LabelModel.regime_": "set by the models with a labeling_functions setting",
    "LabelModel.labeling_function_model_": "set by the models with a labeling_functions "
                                           "setting",
    "LabelModel.classifier_weight_": "set by a fit given pred_probs",
    "LabelModel.classifier_quality_": "set by a fit given pred_probs",
    "LabelModel.classifier_marginal_": "set by a fit given pred_probs",
    "LabelModel.n_unknown_annotations_": "set by predict_proba(new annotations), not by fit",
    "LIA.feature_mean_": "set by a fit with features (Keras training: too slow for this test)",
    "LIA.feature_scale_": "set by a fit with features (Keras training: too slow for this test)",
}


def attribute_entries(cls: type) -> Dict[type, List[str]]:
    """class -> the names its own docstring's "Attributes:" section documents, over the MRO."""
    return {c: section_entries(c.__dict__.get("__doc__"), ("Attributes",)) or []
            for c in cls.__mro__ if c is not object}


def _tiny_fit(name: str):
    from crowd_keras.aggregation.registry import get_label_model
    from crowd_keras.datasets import simulate_crowd

    crowd = simulate_crowd(n_items=40, n_classes=3, n_annotators=6, annotations_per_item=3,
                           n_features=4, seed=0)
    model = get_label_model(name)
    kwargs = {}
    if model.accepts_gold:
        kwargs["gold"] = {0: int(crowd.y[0]), 1: int(crowd.y[1])}
    if getattr(model, "accepts_pred_probs", False):
        rng = np.random.default_rng(0)
        kwargs["pred_probs"] = rng.dirichlet(np.ones(3), size=40)
    return model.fit(crowd.annotations, **kwargs)


def label_model_names() -> List[str]:
    from crowd_keras.aggregation.registry import available_label_models

    return available_label_models(aliases=False)


@pytest.mark.parametrize("name", label_model_names())
def test_documented_fitted_attributes_exist_and_fitted_ones_are_documented(name):
    if name == "lia":   # the only registry model that imports Keras (5-10 s, once a process)
        pytest.importorskip("keras")
    model = _tiny_fit(name)
    cls = type(model)
    entries = attribute_entries(cls)
    documented = {n for names in entries.values() for n in names}
    params = set(model.get_params(deep=False))          # BWA's lambda_ is a setting
    fitted = {k for k in vars(model) if k.endswith("_") and not k.startswith("_")} - params
    missing = sorted(fitted - documented)
    assert not missing, f"{cls.__name__}: fitted attributes not documented: {missing}"
    absent = sorted(n for c, names in entries.items() for n in names
                    if n.endswith("_") and n not in params
                    and f"{c.__name__}.{n}" not in CONDITIONAL
                    and n not in vars(model) and not hasattr(cls, n))
    assert not absent, f"{cls.__name__}: documented attributes that fit did not set: {absent}"


def test_conditional_attributes_are_documented_where_they_are_named():
    # read statically: LIA's module imports Keras
    where = {"LabelModel": "crowd_keras.aggregation.base", "LIA": "crowd_keras.lia.label_model"}
    for key in CONDITIONAL:
        owner, name = key.split(".")
        _, node = resolve(where[owner], owner)
        assert name in section_entries(ast.get_docstring(node), ("Attributes",)), key
