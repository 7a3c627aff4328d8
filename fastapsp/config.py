"""Run files: a YAML mapping with the same settings as the ``solve`` flags."""

from __future__ import annotations

import dataclasses

from .errors import ConfigError
from .options import RUN_FILE_TYPES as _TYPES  # the one list of settings

__all__ = ["load_run_file", "merge_options"]



def load_run_file(path) -> dict:
    """Settings from a YAML run file; unknown keys and wrong types are errors.

    Keys use the flag names with ``_`` for ``-`` (``partition_file``).
    """
    import yaml

    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read run file: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {str(exc).splitlines()[0]}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a run file must be a mapping of settings, found {type(data).__name__}")
    settings = {}
    for key, value in data.items():
        name = str(key).replace("-", "_")
        if name not in _TYPES:
            raise ConfigError(f"{path}: unknown key {key!r}; allowed: {', '.join(sorted(_TYPES))}")
        want = _TYPES[name]
        if value is not None and want is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if value is not None and (not isinstance(value, want) or (want is int and isinstance(value, bool))):
            raise ConfigError(f"{path}: {key} must be {want.__name__}, found {value!r}")
        settings[name] = value
    return settings


def merge_options(cls, file_settings: dict, flags: dict):
    """``cls`` (a dataclass) from its defaults, then the run file, then the flags given."""
    fields = {f.name for f in dataclasses.fields(cls)}
    values = {k: v for k, v in file_settings.items() if k in fields}
    values.update({k: v for k, v in flags.items() if k in fields and v is not None})
    return cls(**values)
