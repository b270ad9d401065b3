"""A faster way to make frozen, slotted dataclasses: `frozen_dataclass`.

`@frozen_dataclass` stands for `@dataclass(frozen=True, slots=True)` on the IR's
node classes (and the engine's other frozen, slotted ones), with two
differences that no caller can see but by the clock:

- Its `__init__` stores each field through its slot's own descriptor, as
  `span.shifted` does, instead of the generated `object.__setattr__(self,
  "name", value)`, a lookup by name per field: the parser and checker make
  hundreds of thousands of nodes, and this makes them about twice as fast.
- It is cheaper to build, which every `fuse check` pays at start-up.  On
  Python 3.11 `dataclass` compiles six methods per frozen class from source,
  each inside a wrapper function, and compiling costs by the line, not by the
  `exec` (one `exec` for a whole module's methods would save almost nothing):
  with a second `__init__` of our own, the engine's classes took half of
  importing it.  So fewer methods are compiled.  `dataclass` is asked only for
  the fields, slots and `__match_args__` (`init=False, repr=False, eq=False`);
  one `exec` per class makes the methods that run often, `__init__`, `__eq__`
  and `__hash__` (the latter two as `dataclass` writes them); `__repr__`,
  `__setattr__` and `__delattr__` (for debugging, and for refusing writes) are
  closures over the field names.  `_Model`, a real frozen slotted dataclass,
  gives every class the parameters (`__dataclass_params__`) and the pickling
  methods that this Python's `dataclass` gives one.

So `fields`, `is_dataclass`, `replace`, `asdict`, copying and pickling work as
on any dataclass, equality, hash and repr are the same, and assigning or
deleting a field raises `FrozenInstanceError`.  The price: this module's own
code for three of `dataclass`' methods, and only classes whose `__init__` just
stores its arguments.  A test compares every class made here with what
`dataclass` itself makes of the same fields.  (Closures for `__eq__` and
`__hash__` as well would save a fifth as much again at start-up, but
make them a third (hash) to two thirds (equality) slower.)
"""
from __future__ import annotations

from dataclasses import MISSING, FrozenInstanceError, dataclass, fields
from inspect import Parameter, Signature
from operator import attrgetter
from reprlib import recursive_repr
from typing import Callable, TypeVar

T = TypeVar("T", bound=type)


@dataclass(frozen=True, slots=True)
class _Model:
    """A real frozen, slotted dataclass: `frozen_dataclass` gives its classes the
    parameters and the pickling methods this Python's `dataclass` gave this one."""


_SHARED = ("__dataclass_params__", "__getstate__", "__setstate__")


def frozen_dataclass(cls: T) -> T:
    """Class decorator: `@dataclass(frozen=True, slots=True)` for a class whose
    `__init__` only stores its arguments; TypeError for a class with no fields, a
    `__post_init__`, a default factory, or a keyword-only or non-init field."""
    own_doc = bool(cls.__dict__.get("__doc__"))
    if not own_doc:
        cls.__doc__ = "-"  # a stand-in, so that `dataclass` does not write its own (below)
    cls = dataclass(init=False, repr=False, eq=False, slots=True)(cls)
    params = fields(cls)
    if not params or not _plain(cls):
        raise TypeError(f"frozen_dataclass makes only plain dataclasses, not {cls.__qualname__}")
    names = tuple([f.name for f in params])
    namespace: dict = {}
    args = []
    for k, f in enumerate(params):
        if f.default is MISSING:
            args.append(f.name)
        else:
            namespace[f"default{k}"] = f.default
            args.append(f"{f.name}=default{k}")
        namespace[f"set{k}"] = cls.__dict__[f.name].__set__  # the slot's own setter
    self_tuple, other_tuple = (f"({','.join([f'{obj}.{name}' for name in names])},)"
                               for obj in ("self", "other"))
    source = (f"def __init__(self, {', '.join(args)}):\n"
              + "".join([f"    set{k}(self, {name})\n" for k, name in enumerate(names)])
              + "def __eq__(self, other):\n"
              + "    if other.__class__ is self.__class__:\n"
              + f"        return {self_tuple}=={other_tuple}\n"
              + "    return NotImplemented\n"
              + f"def __hash__(self):\n    return hash({self_tuple})\n")
    exec(source, namespace)  # noqa: S102 - code made from the class' field names
    methods = [namespace["__init__"], namespace["__eq__"], namespace["__hash__"],
               *_closures(cls, names)]
    for method in methods:
        method.__qualname__ = f"{cls.__qualname__}.{method.__name__}"
        setattr(cls, method.__name__, method)
    for name in _SHARED:
        if name in _Model.__dict__:
            setattr(cls, name, _Model.__dict__[name])
    if not own_doc:  # the one `dataclass` writes: the class' name and signature
        cls.__doc__ = cls.__name__ + str(Signature([
            Parameter(f.name, Parameter.POSITIONAL_OR_KEYWORD, annotation=f.type,
                      default=Parameter.empty if f.default is MISSING else f.default)
            for f in params]))
    return cls


def _closures(cls: type, names: tuple[str, ...]) -> tuple[Callable, ...]:
    """`cls`' `__repr__`, `__setattr__` and `__delattr__`, as `dataclass` makes them."""
    get = attrgetter(*names)
    values = get if len(names) > 1 else (lambda self: (get(self),))  # always a tuple
    template = f"({', '.join([f'{name}=%r' for name in names])})"

    @recursive_repr()
    def __repr__(self) -> str:
        return self.__class__.__qualname__ + template % values(self)

    def __setattr__(self, name: str, value: object) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    return __repr__, __setattr__, __delattr__


def _plain(cls: type) -> bool:
    """A slotted dataclass whose __init__ only stores its arguments: no
    __post_init__, every field an argument, no default factories, none keyword-only."""
    return "__slots__" in cls.__dict__ and not hasattr(cls, "__post_init__") and not any(
        not f.init or f.default_factory is not MISSING or f.kw_only for f in fields(cls))
