"""scikit-learn's parameter protocol for the library's estimators (label models, trainers).

``get_params`` / ``set_params`` read and write the constructor arguments, which every
estimator stores unchanged under their own names (no work in ``__init__``), so
``sklearn.base.clone`` and grid searches work without scikit-learn being a dependency.
``__sklearn_tags__`` gives scikit-learn's tags (``sklearn.utils.validation.check_is_fitted``
asks for them), importing scikit-learn only when scikit-learn calls it.
"""
from __future__ import annotations

import inspect
from typing import Any, Dict, List

__all__ = ["Params"]


class Params:
    """Mixin: constructor arguments as parameters, the scikit-learn way."""

    @classmethod
    def _param_names(cls) -> List[str]:
        init = cls.__init__
        if init is object.__init__:
            return []
        params = inspect.signature(init).parameters.values()
        for kind, shown in ((inspect.Parameter.VAR_POSITIONAL, "*args"),
                            (inspect.Parameter.VAR_KEYWORD, "**kwargs")):
            # settings passed through them are not parameters: get_params, clone and the
            # copies of a Dask fit would silently drop them
            if any(p.kind is kind for p in params):
                raise TypeError(f"{cls.__name__}.__init__ must not take {shown}: scikit-learn's "
                                "parameter protocol needs named arguments (name each setting "
                                "of the parent class in the signature)")
        return sorted(p.name for p in params if p.name != "self")

    def get_params(self, deep: bool = True) -> Dict[str, Any]:
        """The constructor arguments, ``{name: value}``; ``deep``: also ``name__sub`` of
        arguments that are estimators themselves."""
        out: Dict[str, Any] = {}
        for name in self._param_names():
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update({f"{name}__{k}": v for k, v in value.get_params().items()})
            out[name] = value
        return out

    def set_params(self, **params: Any) -> "Params":
        """Set constructor arguments (``name`` or nested ``name__sub``); returns self."""
        valid = self._param_names()
        nested: Dict[str, Dict[str, Any]] = {}
        for key, value in params.items():
            name, _, sub = key.partition("__")
            if name not in valid:
                raise ValueError(f"invalid parameter {name!r} for {type(self).__name__}; "
                                 f"valid parameters: {valid}")
            if sub:
                nested.setdefault(name, {})[sub] = value
            else:
                setattr(self, name, value)
        for name, sub_params in nested.items():
            value = getattr(self, name)
            if not hasattr(value, "set_params") or isinstance(value, type):
                raise ValueError(f"invalid parameter {name + '__' + next(iter(sub_params))!r} for "
                                 f"{type(self).__name__}: {name} is {value!r}, not an "
                                 f"estimator with parameters")
            value.set_params(**sub_params)
        return self

    def __sklearn_tags__(self) -> Any:
        """scikit-learn's estimator tags, those of ``sklearn.base.BaseEstimator``: a fit is
        required, no target. Only scikit-learn calls this, so it is installed then."""
        from sklearn.utils import Tags, TargetTags
        return Tags(estimator_type=None, target_tags=TargetTags(required=False),
                    transformer_tags=None, regressor_tags=None, classifier_tags=None)

    def __repr__(self) -> str:
        changed = []
        for name in self._param_names():
            param = inspect.signature(type(self).__init__).parameters[name]
            value = getattr(self, name, param.default)
            try:
                same = value is param.default or bool(value == param.default)
            except (ValueError, TypeError):   # arrays and the like
                same = False
            if not same:
                changed.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(changed)})"
